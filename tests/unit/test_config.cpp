#include "driver/config.hpp"

#include <doctest/doctest.h>

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
  CHECK(problems.at(0).file.rfind("pyproject.toml:1:", 0) == 0);
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
