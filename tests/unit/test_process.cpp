#include "driver/process.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace wm;
namespace fs = std::filesystem;

TEST_CASE("PATH-like lists: directories in order, empty entries left out") {
  CHECK(path_list("/a:/b") == std::vector<std::string>{"/a", "/b"});
  CHECK(path_list("/a::/b:") == std::vector<std::string>{"/a", "/b"});
  CHECK(path_list(":/a") == std::vector<std::string>{"/a"});
  CHECK(path_list("").empty());
  CHECK(path_list(":::").empty());
  CHECK(path_list("relative") == std::vector<std::string>{"relative"});
}

TEST_CASE("a whole file is read, bytes as they are") {
  std::string dir = (fs::temp_directory_path() / "wm_process_XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  const std::string path = dir + "/f";
  const std::string text("line\r\nnul\0byte\n", 15);
  std::ofstream(path, std::ios::binary) << text;
  auto read = read_file(path);
  REQUIRE(read);
  CHECK(*read == text);
  std::ofstream(dir + "/empty", std::ios::binary);
  CHECK(read_file(dir + "/empty") == std::string());
  CHECK_FALSE(read_file(dir + "/missing"));
  fs::remove_all(dir);
}

TEST_CASE("commands are quoted as a shell would read them back") {
  CHECK(shell_quote({"python3", "-m", "pip", "install", "a>=1"}) == "python3 -m pip install 'a>=1'");
  CHECK(shell_quote({"echo", "it's", ""}) == "echo 'it'\\''s' ''");
}
