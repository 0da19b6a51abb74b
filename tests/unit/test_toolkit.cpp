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

TEST_CASE("a toolkit's version from its nvcc, run without a shell whatever its path holds") {
  // The CUDA 13 toolkit this machine has (the tests need it), under a root whose name a shell
  // string would break on.
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  REQUIRE_MESSAGE(fs::exists(nvcc), "the CUDA toolkit's nvcc at /usr/local/cuda");
  const fs::path root = fs::temp_directory_path() / "wm unit it's $(false) toolkit";
  fs::remove_all(root);
  fs::create_directories(root / "bin");
  fs::create_symlink(fs::canonical(nvcc), root / "bin" / "nvcc");
  std::string why;
  auto toolkit = read_toolkit(root.string(), why);
  REQUIRE_MESSAGE(toolkit, why);
  CHECK(toolkit->version_source == "bin/nvcc --version");
  CHECK(toolkit->version.starts_with("13."));
  CHECK(toolkit->major == 13);
  fs::remove_all(root);
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
  config.variants[VariantLabel::cuda(12)].env["SHARED"] = "2";
  config.variants[VariantLabel::cuda(13)].env["OTHER"] = "x";
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
  config.variants[VariantLabel::cuda(12)].toolkit = "../toolkits/cuda-12";
  config.variants[VariantLabel::cuda(13)].toolkit = "/opt/cuda-13/./";
  config.variants[VariantLabel::cuda(11)].env["X"] = "y";  // no toolkit: no hint
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
  config.variants[VariantLabel::cuda(12)].toolkit = "../tk/cuda-12.4";
  ToolkitHints hints = toolkit_hints({}, config, (t.root / "proj").string(), {});
  hints.search_root = t.root.string();
  Problems problems;
  auto k = find_toolkit(12, hints, problems);
  REQUIRE(k);
  CHECK(k->found_by == "[tool.wheelmerge.cu12] toolkit");
  CHECK(k->version == "12.4");
  CHECK_FALSE(find_toolkit(13, hints, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].expected.starts_with(
      "a toolkit named by --cuda 13=PATH, WHEELMERGE_CUDA_13 or [tool.wheelmerge.cu13] toolkit, or one at "));
}

TEST_CASE("a torch label's missing toolkit names the label's own table") {
  TempTree t;
  t.write("proj/pyproject.toml", "");
  BuildConfig config;
  const VariantLabel label = VariantLabel::torch(2, 11, 13, true);
  ToolkitHints hints = toolkit_hints({}, config, (t.root / "proj").string(), {}, &label);
  hints.search_root = t.root.string();
  Problems problems;
  CHECK_FALSE(find_toolkit(13, hints, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].expected.starts_with(
      "a toolkit named by --cuda 13=PATH, WHEELMERGE_CUDA_13 or [tool.wheelmerge.torch211plus_cu13] toolkit, or "));
}

TEST_CASE("a cpu label's environment: -march appended to CFLAGS and CXXFLAGS, no toolkit") {
  BuildConfig config;
  const VariantLabel v3 = VariantLabel::cpu(3), v1 = VariantLabel::cpu(1);
  Environment base = {{"PATH", "/usr/bin"}, {"CFLAGS", "-O2 -g"}, {"CUDA_HOME", "/opt/cuda"}};
  Environment env = variant_environment(v3, nullptr, config, base);
  CHECK(env.at("CFLAGS") == "-O2 -g -march=x86-64-v3");
  CHECK(env.at("CXXFLAGS") == "-march=x86-64-v3");
  CHECK(env.at("WHEELMERGE_BUILD_VARIANT") == "x86_64_v3");
  CHECK(env.at("PATH") == "/usr/bin");        // no toolkit put first
  CHECK(env.at("CUDA_HOME") == "/opt/cuda");  // nor any toolkit variable changed
  CHECK_FALSE(env.count("WHEELMERGE_BUILD_CUDA_MAJOR"));
  CHECK(variant_environment(v1, nullptr, config, {}).at("CFLAGS") == "-march=x86-64");  // the baseline

  // The shared env is extended; the variant's own setting is taken as it is.
  config.env["CFLAGS"] = "-O3";
  config.variants[v3].env["CXXFLAGS"] = "-O1 -march=haswell";
  env = variant_environment(v3, nullptr, config, base);
  CHECK(env.at("CFLAGS") == "-O3 -march=x86-64-v3");
  CHECK(env.at("CXXFLAGS") == "-O1 -march=haswell");
  CHECK(environment_changes(base, env) == Environment{{"CFLAGS", "-O3 -march=x86-64-v3"},
                                                      {"CXXFLAGS", "-O1 -march=haswell"},
                                                      {"WHEELMERGE_BUILD_VARIANT", "x86_64_v3"}});
  // An unset variable starts from the interpreter's flags, which setuptools would otherwise use.
  env = variant_environment(v3, nullptr, BuildConfig{}, {{"CXXFLAGS", "-O2"}}, "-DNDEBUG -O3");
  CHECK(env.at("CFLAGS") == "-DNDEBUG -O3 -march=x86-64-v3");
  CHECK(env.at("CXXFLAGS") == "-O2 -march=x86-64-v3");
  CHECK(march_value(1) == "x86-64");
  CHECK(march_value(4) == "x86-64-v4");
}

TEST_CASE("a torch label's environment: its CUDA major's toolkit and its own table") {
  Toolkit k;
  k.root = "/opt/cuda-12.9";
  k.major = 12;
  BuildConfig config;
  const VariantLabel torch = VariantLabel::torch(2, 10, 12);
  config.variants[torch].env["TORCH_CUDA_ARCH_LIST"] = "8.0";
  config.variants[VariantLabel::torch(2, 9, 12)].env["TORCH_CUDA_ARCH_LIST"] = "7.0";
  Environment env = variant_environment(torch, &k, config, {{"CFLAGS", "-O2"}});
  CHECK(env.at("CUDA_HOME") == "/opt/cuda-12.9");
  CHECK(env.at("WHEELMERGE_BUILD_CUDA_MAJOR") == "12");
  CHECK(env.at("WHEELMERGE_BUILD_VARIANT") == "torch210_cu12");
  CHECK(env.at("TORCH_CUDA_ARCH_LIST") == "8.0");
  CHECK(env.at("CFLAGS") == "-O2");  // no -march for GPU builds

  // Two torch labels of one CUDA major each get their own table's toolkit.
  config.variants[torch].toolkit = "/tk/a";
  config.variants[VariantLabel::torch(2, 9, 12)].toolkit = "/tk/b";
  const VariantLabel other = VariantLabel::torch(2, 9, 12);
  CHECK(toolkit_hints({}, config, "/p", {}, &torch).config.at(12) == "/tk/a");
  CHECK(toolkit_hints({}, config, "/p", {}, &other).config.at(12) == "/tk/b");
  CHECK(toolkit_hints({}, config, "/p", {}, &other).config_table.at(12) == "torch29_cu12");
}

TEST_CASE("build_info from the toolkit and the build environment") {
  Toolkit k;
  k.version = "12.9.1";
  auto probe = nlohmann::json::parse(R"({"cuda_bindings": "12.9.4", "torch": "2.10.0+cu128", "torch_cuda": "12.8"})");
  CHECK(variant_build_info(VariantLabel::torch(2, 10, 12), &k, probe) ==
        std::map<std::string, std::string>{
            {"cuda_version", "12.9"}, {"cuda_bindings", "12.9.4"}, {"torch", "2.10.0"}, {"torch_cuda", "12.8"}});
  k.version = "13.0";
  CHECK(variant_build_info(VariantLabel::cuda(13), &k, nlohmann::json::object()) ==
        std::map<std::string, std::string>{{"cuda_version", "13.0"}});
  k.version = "14";
  CHECK(variant_build_info(VariantLabel::cuda(14), &k, nlohmann::json::object()).at("cuda_version") == "14");
  CHECK(variant_build_info(VariantLabel::cpu(3), nullptr, nlohmann::json::object()) ==
        std::map<std::string, std::string>{{"march", "x86-64-v3"}});
  CHECK(variant_build_info(VariantLabel::cpu(1), nullptr, nlohmann::json::parse(R"({"cuda_bindings": "13.0.3"})")) ==
        std::map<std::string, std::string>{{"march", "x86-64"}, {"cuda_bindings", "13.0.3"}});
}

TEST_CASE("a torch label is checked against the torch its environment has") {
  const VariantLabel label = VariantLabel::torch(2, 10, 12);
  auto probe = [](const char* text) { return nlohmann::json::parse(text); };
  CHECK_FALSE(torch_mismatch(label, probe(R"({"torch": "2.10.0+cu128", "torch_cuda": "12.8"})")));
  CHECK_FALSE(torch_mismatch(label, probe(R"({"torch": "2.10.1", "torch_cuda": "12.6"})")));
  CHECK(torch_mismatch(label, probe(R"({"torch": "2.11.0", "torch_cuda": "13.0"})")) ==
        "the environment has torch 2.11.0 built with CUDA 13.0, whose label is torch211_cu13");
  CHECK(torch_mismatch(label, probe(R"({"torch": "2.10.0+cu130", "torch_cuda": "13.0"})")) ==
        "the environment has torch 2.10.0 built with CUDA 13.0, whose label is torch210_cu13");
  CHECK(torch_mismatch(label, probe(R"({"torch": "2.10.0+cpu"})")) ==
        "the environment has torch 2.10.0 built without CUDA, whose label is torch210_cpu");
  CHECK(torch_mismatch(label, probe("{}")) == "the environment has no torch");
  CHECK(torch_mismatch(label, probe(R"({"torch": "2.10.0", "torch_cuda": "x"})")) ==
        "the environment has torch 2.10.0 built with CUDA x, which no torch label names");
  // A CPU-only torch for a _cpu label.
  CHECK_FALSE(torch_mismatch(VariantLabel::torch(2, 10, 0), probe(R"({"torch": "2.10.0+cpu"})")));
  CHECK(torch_mismatch(VariantLabel::torch(2, 10, 0), probe(R"({"torch": "2.10.0", "torch_cuda": "12.8"})")) ==
        "the environment has torch 2.10.0 built with CUDA 12.8, whose label is torch210_cu12");
}

TEST_CASE("a torch floor label takes its floor or a later minor of its major, of its CUDA major") {
  const VariantLabel floor = VariantLabel::torch(2, 10, 13, true);
  auto probe = [](const char* text) { return nlohmann::json::parse(text); };
  CHECK_FALSE(torch_mismatch(floor, probe(R"({"torch": "2.10.0", "torch_cuda": "13.0"})")));
  CHECK_FALSE(torch_mismatch(floor, probe(R"({"torch": "2.12.1", "torch_cuda": "13.2"})")));
  CHECK(torch_mismatch(floor, probe(R"({"torch": "2.9.1", "torch_cuda": "13.0"})")) ==
        "the environment has torch 2.9.1 built with CUDA 13.0, whose label is torch29plus_cu13");
  CHECK(torch_mismatch(floor, probe(R"({"torch": "2.11.0", "torch_cuda": "12.8"})")) ==
        "the environment has torch 2.11.0 built with CUDA 12.8, whose label is torch211plus_cu12");
  CHECK(torch_mismatch(floor, probe(R"({"torch": "3.0.0", "torch_cuda": "13.0"})")) ==
        "the environment has torch 3.0.0 built with CUDA 13.0, whose label is torch30plus_cu13");
  CHECK_FALSE(torch_mismatch(VariantLabel::torch(2, 10, 0, true), probe(R"({"torch": "2.11.0+cpu"})")));
}

TEST_CASE("the labels the command line asks for") {
  auto names = [](const std::vector<VariantLabel>& labels) {
    std::vector<std::string> out;
    for (const VariantLabel& l : labels) out.push_back(l.str());
    return out;
  };
  BuildConfig config;
  BuildOptions options;
  CHECK(requested_labels(options, config).empty());
  options.majors = {13, 12};
  CHECK(names(requested_labels(options, config)) == std::vector<std::string>{"cu13", "cu12"});
  options.labels = {VariantLabel::cpu(2)};
  CHECK(names(requested_labels(options, config)) == std::vector<std::string>{"x86_64_v2", "cu13", "cu12"});
  // With torch labels, --cuda N=PATH names a toolkit root, not a build.
  options.labels = {VariantLabel::torch(2, 10, 12)};
  CHECK(names(requested_labels(options, config)) == std::vector<std::string>{"torch210_cu12"});
  options.labels.clear();
  config.labels = {VariantLabel::torch(2, 10, 12), VariantLabel::torch(2, 11, 13)};
  CHECK(requested_labels(options, config).empty());
  CHECK(names(chosen_labels(requested_labels(options, config), config)) ==
        std::vector<std::string>{"torch210_cu12", "torch211_cu13"});
}

TEST_CASE("a build kept by --no-merge is named with its label; a torch label brings its torch") {
  CHECK(labelled_wheel_name("pkg-1.0-cp312-cp312-linux_x86_64.whl", VariantLabel::cuda(12)) ==
        "pkg-1.0-cp312-cp312-linux_x86_64.cu12.whl");
  CHECK(labelled_wheel_name("pkg-1.0-py3-none-any.whl", VariantLabel::torch(2, 10, 12, true)) ==
        "pkg-1.0-py3-none-any.torch210plus_cu12.whl");
  CHECK(labelled_wheel_name("pkg-1.0-py3-none-any.whl", VariantLabel::cpu(3)) == "pkg-1.0-py3-none-any.x86_64_v3.whl");
  // The exact release, and a floor's own: what the label says the build is made against.
  CHECK(label_torch_requirement(VariantLabel::torch(2, 10, 12)) == "torch==2.10.*");
  CHECK(label_torch_requirement(VariantLabel::torch(2, 11, 13, true)) == "torch==2.11.*");
  CHECK(label_torch_requirement(VariantLabel::torch(3, 0, 0)) == "torch==3.0.*");
  CHECK_FALSE(label_torch_requirement(VariantLabel::cuda(13)));
  CHECK_FALSE(label_torch_requirement(VariantLabel::cpu(2)));
}
