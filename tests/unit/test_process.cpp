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

TEST_CASE("a program is found as a shell finds it: the first executable on PATH") {
  std::string dir = (fs::temp_directory_path() / "wm_process_XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  fs::create_directories(dir + "/c");
  std::ofstream(dir + "/a/tool") << "not executable";
  std::ofstream(dir + "/b/tool") << "#!/bin/sh\n";
  std::ofstream(dir + "/c/tool") << "#!/bin/sh\n";
  fs::permissions(dir + "/b/tool", fs::perms::owner_exec, fs::perm_options::add);
  fs::permissions(dir + "/c/tool", fs::perms::owner_exec, fs::perm_options::add);
  const Environment env{{"PATH", dir + "/a::" + dir + "/b:" + dir + "/c"}};
  CHECK(find_program("tool", env) == dir + "/b/tool");
  CHECK(find_program("missing", env) == std::nullopt);
  CHECK(find_program("tool", Environment{}) == std::nullopt);
  CHECK(find_program("./relative/tool", env) == "./relative/tool");  // a slash: no search
  fs::remove_all(dir);
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
