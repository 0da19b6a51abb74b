#include "driver/config.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace wm;

TEST_CASE("the schema from TOML") {
  Problems problems;
  BuildSystem bs;
  auto c = parse_toml_config(R"(
[build-system]
requires = ["wheelmerge", "setuptools>=70"]
build-backend = "wheelmerge.backend"

[tool.wheelmerge]
cuda = [12, 13]
backend = "setuptools.build_meta"
variant-files = ["pkg/_info.py"]
driver-fallback = true
env = { A = "1" }

[tool.wheelmerge.cu12]
toolkit = "/opt/cuda-12"
env = { TORCH_CUDA_ARCH_LIST = "7.0;8.0" }
)", "pyproject.toml", problems, &bs);
  REQUIRE(c);
  CHECK(problems.empty());
  CHECK(c->cuda == std::vector<int>{12, 13});
  CHECK(c->backend == "setuptools.build_meta");
  CHECK(c->variant_files == std::vector<std::string>{"pkg/_info.py"});
  CHECK(c->driver_fallback);
  CHECK(c->env.at("A") == "1");
  CHECK(c->variants.at(12).toolkit == "/opt/cuda-12");
  CHECK(c->variants.at(12).env.at("TORCH_CUDA_ARCH_LIST") == "7.0;8.0");
  CHECK(bs.backend == "wheelmerge.backend");
  CHECK(bs.requirements == std::vector<std::string>{"wheelmerge", "setuptools>=70"});
}

TEST_CASE("the same schema from YAML") {
  Problems problems;
  auto c = parse_yaml_config("cuda: [12, 13]\ndriver-fallback: false\ncu13:\n  env:\n    X: y\n", "wheelmerge.yaml", problems);
  REQUIRE(c);
  CHECK(c->cuda == std::vector<int>{12, 13});
  CHECK_FALSE(c->driver_fallback);
  CHECK(c->variants.at(13).env.at("X") == "y");
}

TEST_CASE("unknown keys are errors that say where") {
  Problems problems;
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\ncuda = [12]\nvariant_files = []\n", "pyproject.toml", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == "pyproject.toml:3:17");
  CHECK(problems[0].what == "unknown key \"variant_files\"");
  CHECK(problems[0].kind == ProblemKind::usage);

  problems.clear();
  CHECK_FALSE(parse_yaml_config("cu12:\n  toolkit: /x\n  tolkit: /y\n", "wheelmerge.yaml", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == "wheelmerge.yaml:3:11");
  CHECK(problems[0].what == "unknown key \"cu12.tolkit\"");
}

TEST_CASE("wrong types and duplicates") {
  Problems problems;
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\ncuda = 12\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"cuda\" must be an array");
  problems.clear();
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\ncuda = [12, \"13\"]\n", "p.toml", problems));
  CHECK(problems.at(0).found == "a string");
  problems.clear();
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\ncuda = [12, 12]\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"cuda\" lists a major twice");
  problems.clear();
  CHECK_FALSE(parse_yaml_config("driver-fallback: yes please\n", "w.yaml", problems));
  CHECK(problems.at(0).what == "\"driver-fallback\" must be true or false");
}

TEST_CASE("syntax errors name the place") {
  Problems problems;
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge\n", "pyproject.toml", problems));
  CHECK(problems.at(0).what == "not valid TOML");
  CHECK(problems.at(0).file.starts_with("pyproject.toml:1:"));
  problems.clear();
  CHECK_FALSE(parse_yaml_config("cuda: [12\n", "wheelmerge.yaml", problems));
  CHECK(problems.at(0).what == "not valid YAML");
}

TEST_CASE("no [tool.wheelmerge] is an empty configuration") {
  Problems problems;
  auto c = parse_toml_config("[project]\nname = \"x\"\n", "pyproject.toml", problems);
  REQUIRE(c);
  CHECK(c->cuda.empty());
  CHECK(c->source.empty());
}

TEST_CASE("cuNN tables: one or two digits after cu, as they have always been read") {
  Problems problems;
  auto c = parse_toml_config("[tool.wheelmerge.cu5]\ntoolkit = \"/a\"\n[tool.wheelmerge.cu012]\ntoolkit = \"/b\"\n", "p.toml", problems);
  CHECK_FALSE(c);  // three digits: an unknown key
  CHECK(problems.at(0).what == "unknown key \"cu012\"");
  problems.clear();
  c = parse_toml_config("[tool.wheelmerge.cu05]\ntoolkit = \"/a\"\n[tool.wheelmerge.cu13]\ntoolkit = \"/b\"\n", "p.toml", problems);
  REQUIRE(c);
  CHECK(c->variants.at(5).toolkit == "/a");  // a leading zero is the same major
  CHECK(c->variants.at(13).toolkit == "/b");
  for (const char* key : {"cu", "cu1a", "CU12", "cu123"}) {
    CAPTURE(key);
    problems.clear();
    CHECK_FALSE(parse_yaml_config(std::string(key) + ":\n  toolkit: /x\n", "w.yaml", problems));
    CHECK(problems.at(0).what == "unknown key \"" + std::string(key) + "\"");
  }
}

TEST_CASE("the configuration as `wheelmerge config` prints it") {
  Problems problems;
  ProjectConfig project;
  auto c = parse_toml_config(R"(
[build-system]
requires = ["wheelmerge"]
build-backend = "wheelmerge.backend"
backend-path = ["."]

[tool.wheelmerge]
cuda = [13, 12]
backend = "setuptools.build_meta"
backend-path = ["_build"]
variant-files = ["pkg/_info.py"]
env = { A = "1" }

[tool.wheelmerge.cu12]
toolkit = "/opt/cuda-12"

[tool.wheelmerge.cu09]
env = { B = "2" }
)", "pyproject.toml", problems, &project.build_system);
  REQUIRE(c);
  project.wheelmerge = *c;
  CHECK(config_json(project) == nlohmann::json::parse(R"({
    "source": "pyproject.toml",
    "cuda": [13, 12],
    "backend": "setuptools.build_meta",
    "backend-path": ["_build"],
    "variant-files": ["pkg/_info.py"],
    "driver-fallback": false,
    "env": {"A": "1"},
    "variants": {"cu9": {"toolkit": "", "env": {"B": "2"}}, "cu12": {"toolkit": "/opt/cuda-12", "env": {}}},
    "build-system": {"requires": ["wheelmerge"], "build-backend": "wheelmerge.backend", "backend-path": ["."]}
  })"));
  // Empty parts are still there, as empty lists, objects and strings.
  CHECK(config_json(ProjectConfig{}) == nlohmann::json::parse(R"({
    "source": "", "cuda": [], "backend": "", "backend-path": [], "variant-files": [], "driver-fallback": false,
    "env": {}, "variants": {}, "build-system": {"requires": [], "build-backend": "", "backend-path": []}
  })"));
}

TEST_CASE("which majors: the command line's, else the configuration's, else 12 and 13") {
  BuildConfig config;
  CHECK(chosen_cuda_majors({}, config) == std::vector<int>{12, 13});
  config.cuda = {13, 11};
  CHECK(chosen_cuda_majors({}, config) == std::vector<int>{13, 11});
  CHECK(chosen_cuda_majors({12, 12}, config) == std::vector<int>{12, 12});  // as given
}

TEST_CASE("a CUDA major on the command line") {
  CHECK(parse_cuda_major("12") == 12);
  CHECK(parse_cuda_major("5") == 5);
  CHECK(parse_cuda_major("05") == 5);
  CHECK(parse_cuda_major("0") == 0);
  for (const char* bad : {"", "123", "cu12", "1a", " 1", "-1", "+1"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cuda_major(bad));
  }

  auto plain = parse_cuda_option("12");
  REQUIRE(plain);
  CHECK(plain->major == 12);
  CHECK_FALSE(plain->toolkit);
  auto labelled = parse_cuda_option("cu13=/opt/cuda=13");
  REQUIRE(labelled);
  CHECK(labelled->major == 13);
  CHECK(labelled->toolkit == "/opt/cuda=13");  // split at the first '='
  auto empty_path = parse_cuda_option("12=");
  REQUIRE(empty_path);
  CHECK(empty_path->toolkit == "");
  for (const char* bad : {"", "cu", "123", "cu123", "cucu12", "CU12", "x=12", "=/opt", " 12"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cuda_option(bad));
  }
}
