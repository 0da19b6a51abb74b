#include "driver/build.hpp"
#include "driver/toolkit.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace wm;
namespace fs = std::filesystem;

namespace {
// A directory tree under the system's temporary directory, removed at the end of the test.
struct TempTree {
  fs::path root;
  TempTree() {
    std::string t = (fs::temp_directory_path() / "wm_toolkit_XXXXXX").string();
    REQUIRE(mkdtemp(t.data()));
    root = t;
  }
  ~TempTree() { fs::remove_all(root); }
  fs::path write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
    return root / rel;
  }
};
}  // namespace

TEST_CASE("a toolkit's version: version.json first, then cuda.h") {
  TempTree t;
  t.write("a/include/cuda.h", "#define CUDA_VERSION 12090\n");
  std::string why;
  auto a = read_toolkit((t.root / "a").string(), why);
  REQUIRE(a);
  CHECK(a->version == "12.9");
  CHECK(a->major == 12);
  CHECK(a->version_source == "include/cuda.h");
  t.write("a/version.json", R"({"cuda": {"name": "CUDA SDK", "version": "12.9.1"}})");
  a = read_toolkit((t.root / "a").string(), why);
  REQUIRE(a);
  CHECK(a->version == "12.9.1");
  CHECK(a->version_source == "version.json");
  fs::create_directories(t.root / "empty");
  CHECK_FALSE(read_toolkit((t.root / "empty").string(), why));
  CHECK(why.find("no version.json") != std::string::npos);
}

TEST_CASE("explicit toolkits of another major are refused; discovery passes them over") {
  TempTree t;
  t.write("cuda-13.0/include/cuda.h", "#define CUDA_VERSION 13000\n");
  t.write("cuda-12.4/include/cuda.h", "#define CUDA_VERSION 12040\n");
  t.write("cuda-12.8/include/cuda.h", "#define CUDA_VERSION 12080\n");
  ToolkitHints hints;
  hints.search_root = t.root.string();
  Problems problems;

  SUBCASE("--cuda with the wrong major") {
    hints.command_line[12] = (t.root / "cuda-13.0").string();
    CHECK_FALSE(find_toolkit(12, hints, problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].expected == "CUDA 12");
    CHECK(problems[0].found.find("CUDA 13.0") != std::string::npos);
  }
  SUBCASE("WHEELMERGE_CUDA_N beats discovery") {
    hints.env["WHEELMERGE_CUDA_12"] = (t.root / "cuda-12.4").string();
    auto k = find_toolkit(12, hints, problems);
    REQUIRE(k);
    CHECK(k->version == "12.4");
    CHECK(k->found_by == "WHEELMERGE_CUDA_12");
  }
  SUBCASE("CUDA_HOME of another major is skipped; the newest cuda-N.* wins") {
    hints.env["CUDA_HOME"] = (t.root / "cuda-13.0").string();
    auto k = find_toolkit(12, hints, problems);
    REQUIRE(k);
    CHECK(k->version == "12.8");
    auto k13 = find_toolkit(13, hints, problems);
    REQUIRE(k13);
    CHECK(k13->found_by == "CUDA_HOME");
  }
  SUBCASE("versions compare as numbers") {
    t.write("cuda-12.10/include/cuda.h", "#define CUDA_VERSION 12100\n");
    auto k = find_toolkit(12, hints, problems);
    REQUIRE(k);
    CHECK(k->version == "12.10");
  }
  SUBCASE("none found: every place is named") {
    hints.env["CUDA_HOME"] = (t.root / "cuda-13.0").string();
    CHECK_FALSE(find_toolkit(11, hints, problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "no CUDA 11 toolkit found");
    CHECK(problems[0].found.find("CUDA_HOME") != std::string::npos);
    CHECK(problems[0].found.find("cuda-11.*") != std::string::npos);
    CHECK(problems[0].found.find("nvcc on PATH") != std::string::npos);
  }
}

TEST_CASE("a variant's environment points everything at its toolkit") {
  TempTree t;
  t.write("cuda-13/bin/nvcc", "");
  t.write("cuda-13/include/cuda.h", "#define CUDA_VERSION 13000\n");
  Toolkit k;
  k.root = (t.root / "cuda-12").string();
  k.major = 12;
  BuildConfig config;
  config.env["SHARED"] = "1";
  config.variants[12].env["SHARED"] = "2";
  config.variants[13].env["OTHER"] = "x";
  const std::string other_bin = (t.root / "cuda-13/bin").string();
  Environment base = {{"PATH", other_bin + ":/usr/bin"}, {"CUDACXX", other_bin + "/nvcc"}, {"KEEP", "k"}};
  Environment env = variant_environment(k, config, base);
  CHECK(env.at("CUDA_HOME") == k.root);
  CHECK(env.at("CUDA_PATH") == k.root);
  CHECK(env.at("CUDAToolkit_ROOT") == k.root);
  // Another toolkit's nvcc is neither on PATH nor named by CUDACXX.
  CHECK(env.at("PATH") == k.root + "/bin:/usr/bin");
  CHECK_FALSE(env.count("CUDACXX"));
  CHECK(env.at("WHEELMERGE_BUILD_CUDA_MAJOR") == "12");
  CHECK(env.at("SHARED") == "2");
  CHECK(env.at("KEEP") == "k");
  CHECK_FALSE(env.count("OTHER"));
  Environment changes = environment_changes(base, env);
  CHECK(changes.at("CUDACXX").empty());
  CHECK_FALSE(changes.count("KEEP"));

  Toolkit k13;
  k13.root = (t.root / "cuda-13").string();
  k13.major = 13;
  Environment env13 = variant_environment(k13, config, base);
  CHECK(env13.at("CUDACXX") == k13.root + "/bin/nvcc");
  CHECK(env13.at("PATH") == k13.root + "/bin:" + other_bin + ":/usr/bin");
}

TEST_CASE("source copies leave build outputs behind") {
  TempTree t;
  t.write("p/pyproject.toml", "[project]\n");
  t.write("p/pkg/__init__.py", "");
  t.write("p/build/lib/pkg/_core.so", "stale");
  t.write("p/pkg.egg-info/PKG-INFO", "stale");
  t.write("p/.git/HEAD", "ref");
  std::string error;
  REQUIRE(copy_source_tree((t.root / "p").string(), (t.root / "copy").string(), error));
  CHECK(fs::exists(t.root / "copy/pyproject.toml"));
  CHECK(fs::exists(t.root / "copy/pkg/__init__.py"));
  CHECK_FALSE(fs::exists(t.root / "copy/build"));
  CHECK_FALSE(fs::exists(t.root / "copy/pkg.egg-info"));
  CHECK_FALSE(fs::exists(t.root / "copy/.git"));
}

TEST_CASE("toolkit hints: the command line as given, the configuration's against the project") {
  BuildConfig config;
  config.variants[12].toolkit = "../toolkits/cuda-12";
  config.variants[13].toolkit = "/opt/cuda-13/./";
  config.variants[11].env["X"] = "y";  // no toolkit: no hint
  ToolkitHints hints = toolkit_hints({{12, "rel/cuda"}}, config, "/work/proj", {{"CUDA_HOME", "/c"}});
  CHECK(hints.command_line == std::map<int, std::string>{{12, "rel/cuda"}});
  CHECK(hints.config == std::map<int, std::string>{{12, "/work/toolkits/cuda-12"}, {13, "/opt/cuda-13/"}});
  CHECK(hints.env == std::map<std::string, std::string>{{"CUDA_HOME", "/c"}});
  CHECK(hints.search_root == "/usr/local");
  // A relative project directory gives relative hints, as `wheelmerge toolkit` has always shown them.
  CHECK(toolkit_hints({}, config, "proj", {}).config.at(12) == "toolkits/cuda-12");
}

TEST_CASE("a configuration's toolkit is found by its table's name") {
  TempTree t;
  t.write("proj/pyproject.toml", "");
  t.write("tk/cuda-12.4/include/cuda.h", "#define CUDA_VERSION 12040\n");
  BuildConfig config;
  config.variants[12].toolkit = "../tk/cuda-12.4";
  ToolkitHints hints = toolkit_hints({}, config, (t.root / "proj").string(), {});
  hints.search_root = t.root.string();
  Problems problems;
  auto k = find_toolkit(12, hints, problems);
  REQUIRE(k);
  CHECK(k->found_by == "[tool.wheelmerge.cu12] toolkit");
  CHECK(k->version == "12.4");
  CHECK_FALSE(find_toolkit(13, hints, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].expected == "--cuda 13=PATH, WHEELMERGE_CUDA_13, [tool.wheelmerge.cu13] toolkit, or a discoverable toolkit");
}
