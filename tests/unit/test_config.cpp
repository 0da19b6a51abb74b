#include "driver/config.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <tuple>

using namespace wm;

TEST_CASE("the schema from TOML") {
  Problems problems;
  BuildSystem bs;
  auto c = parse_toml_config(R"(
[build-system]
requires = ["wheelmerge-cuda", "setuptools>=70"]
build-backend = "wheelmerge.backend"

[tool.wheelmerge]
cuda = [12, 13]
backend = "setuptools.build_meta"
variant-files = ["pkg/_info.py"]
driver-fallback = true
runtime-requirements = true
env = { A = "1" }

[tool.wheelmerge.cu12]
toolkit = "/opt/cuda-12"
env = { TORCH_CUDA_ARCH_LIST = "7.0;8.0" }
)",
                             "pyproject.toml", problems, &bs);
  REQUIRE(c);
  CHECK(problems.empty());
  CHECK(c->cuda == std::vector<int>{12, 13});
  CHECK(c->backend == "setuptools.build_meta");
  CHECK(c->variant_files == std::vector<std::string>{"pkg/_info.py"});
  CHECK(c->driver_fallback);
  CHECK(c->runtime_requirements);
  CHECK(c->env.at("A") == "1");
  CHECK(c->variants.at(VariantLabel::cuda(12)).toolkit == "/opt/cuda-12");
  CHECK(c->variants.at(VariantLabel::cuda(12)).env.at("TORCH_CUDA_ARCH_LIST") == "7.0;8.0");
  CHECK(bs.backend == "wheelmerge.backend");
  CHECK(bs.requirements == std::vector<std::string>{"wheelmerge-cuda", "setuptools>=70"});
}

TEST_CASE("the same schema from YAML") {
  Problems problems;
  auto c = parse_yaml_config("cuda: [12, 13]\ndriver-fallback: false\ncu13:\n  env:\n    X: y\n", "wheelmerge.yaml",
                             problems);
  REQUIRE(c);
  CHECK(c->cuda == std::vector<int>{12, 13});
  CHECK_FALSE(c->driver_fallback);
  CHECK_FALSE(c->runtime_requirements);
  CHECK(c->variants.at(VariantLabel::cuda(13)).env.at("X") == "y");
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
  problems.clear();
  CHECK_FALSE(parse_yaml_config("runtime-requirements: 1\n", "w.yaml", problems));
  CHECK(problems.at(0).what == "\"runtime-requirements\" must be true or false");
}

TEST_CASE("YAML keys given twice are refused, naming both places, as ruamel.yaml does") {
  Problems problems;
  CHECK_FALSE(parse_yaml_config("variant-files: [a]\ndriver-fallback: true\nvariant-files: [b]\n", "w.yaml", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == "w.yaml:3:1");
  CHECK(problems[0].what == "key \"variant-files\" given twice");
  CHECK(problems[0].found == "the key at line 1, column 1 as well");
  problems.clear();
  CHECK_FALSE(parse_yaml_config("cu12:\n  env:\n    A: x\n    A: y\n", "w.yaml", problems));
  CHECK(problems.at(0).what == "key \"A\" given twice");
  problems.clear();
  CHECK_FALSE(parse_yaml_config("? [a]\n: 1\n", "w.yaml", problems));
  CHECK(problems.at(0).what == "a YAML key that is not a string");
  // Aliases: a short text, an exponential tree; refused by size, not walked.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c)
    laughs += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, char(c - 1),
                          char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1),
                          char(c - 1), char(c - 1));
  problems.clear();
  CHECK_FALSE(parse_yaml_config(laughs, "w.yaml", problems));
  CHECK(problems.at(0).what == "YAML too large");
}

TEST_CASE("environment names are POSIX names and no value holds a NUL") {
  Problems problems;
  for (const char* name : {"\"A=B\"", "\"\"", "\"1X\"", "\"A B\"", "\"A\\u0000B\""}) {
    problems.clear();
    CHECK_FALSE(parse_toml_config(fmt::format("[tool.wheelmerge.env]\n{} = \"x\"\n", name), "p.toml", problems));
    CHECK(problems.at(0).what == "\"env\" names an invalid environment variable");
  }
  problems.clear();
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge.env]\nA = \"x\\u0000y\"\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"env.A\" holds a NUL character");
  problems.clear();
  auto c = parse_toml_config("[tool.wheelmerge.env]\n_A1 = \"x\"\n", "p.toml", problems);
  REQUIRE(c);
  CHECK(c->env.at("_A1") == "x");
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
  auto c = parse_toml_config("[tool.wheelmerge.cu5]\ntoolkit = \"/a\"\n[tool.wheelmerge.cu012]\ntoolkit = \"/b\"\n",
                             "p.toml", problems);
  CHECK_FALSE(c);  // three digits: an unknown key
  CHECK(problems.at(0).what == "unknown key \"cu012\"");
  problems.clear();
  c = parse_toml_config("[tool.wheelmerge.cu05]\ntoolkit = \"/a\"\n[tool.wheelmerge.cu13]\ntoolkit = \"/b\"\n",
                        "p.toml", problems);
  REQUIRE(c);
  CHECK(c->variants.at(VariantLabel::cuda(5)).toolkit == "/a");  // a leading zero is the same major
  CHECK(c->variants.at(VariantLabel::cuda(13)).toolkit == "/b");
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
requires = ["wheelmerge-cuda"]
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
)",
                             "pyproject.toml", problems, &project.build_system);
  REQUIRE(c);
  project.wheelmerge = *c;
  CHECK(config_json(project) == nlohmann::json::parse(R"({
    "source": "pyproject.toml",
    "selector": "cuda",
    "labels": ["cu13", "cu12"],
    "cuda": [13, 12],
    "backend": "setuptools.build_meta",
    "backend-path": ["_build"],
    "variant-files": ["pkg/_info.py"],
    "driver-fallback": false,
    "runtime-requirements": false,
    "env": {"A": "1"},
    "variants": {"cu9": {"toolkit": "", "env": {"B": "2"}, "build-requires": []},
                 "cu12": {"toolkit": "/opt/cuda-12", "env": {}, "build-requires": []}},
    "build-system": {"requires": ["wheelmerge-cuda"], "build-backend": "wheelmerge.backend", "backend-path": ["."]}
  })"));
  // Empty parts are still there, as empty lists, objects and strings.
  CHECK(config_json(ProjectConfig{}) == nlohmann::json::parse(R"({
    "source": "", "selector": "cuda", "labels": [], "cuda": [], "backend": "", "backend-path": [], "variant-files": [], "driver-fallback": false,
    "runtime-requirements": false, "env": {}, "variants": {}, "build-system": {"requires": [], "build-backend": "", "backend-path": []}
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

TEST_CASE("--cuda values: majors chosen, toolkits named, a named toolkit's major built once majors are chosen") {
  auto take = [](std::vector<std::string> values) {
    std::vector<int> majors;
    std::map<int, std::string> paths;
    auto bad = take_cuda_options(values, majors, paths);
    return std::tuple{majors, paths, bad};
  };
  // N=PATH alone names a toolkit and chooses no build.
  CHECK(take({"12=/opt/cuda-12"}) ==
        std::tuple{std::vector<int>{}, std::map<int, std::string>{{12, "/opt/cuda-12"}}, std::optional<std::string>()});
  // With a major chosen, the named toolkit's major is built as well.
  CHECK(take({"12=/opt/cuda-12", "13"}) == std::tuple{std::vector<int>{13, 12},
                                                      std::map<int, std::string>{{12, "/opt/cuda-12"}},
                                                      std::optional<std::string>()});
  CHECK(std::get<0>(take({"cu12", "12=/p"})) == std::vector<int>{12});  // not twice
  // The first value that is neither, an empty path included.
  CHECK(std::get<2>(take({"12", "12=", "x"})) == "12=");
  CHECK(std::get<2>(take({"13", "nope"})) == "nope");
}

TEST_CASE("variants: labels of any selector, in the order written") {
  Problems problems;
  auto c = parse_toml_config(R"(
[tool.wheelmerge]
variants = ["torch211_cu13", "torch210_cu12"]

[tool.wheelmerge.torch210_cu12]
toolkit = "/opt/cuda-12.9"
build-requires = ["torch==2.10.*", "numpy>=2; python_version >= '3.10'"]
env = { TORCH_CUDA_ARCH_LIST = "8.0" }
)",
                             "pyproject.toml", problems);
  REQUIRE(c);
  CHECK(problems.empty());
  CHECK(c->cuda.empty());
  REQUIRE(c->labels.size() == 2);
  CHECK(c->labels[0].str() == "torch211_cu13");
  CHECK(c->labels[1].str() == "torch210_cu12");
  CHECK(c->selector() == Selector::torch);
  const VariantConfig& v = c->variant(*VariantLabel::parse("torch210_cu12"));
  CHECK(v.toolkit == "/opt/cuda-12.9");
  CHECK(v.build_requires == std::vector<std::string>{"torch==2.10.*", "numpy>=2; python_version >= '3.10'"});
  CHECK(v.env.at("TORCH_CUDA_ARCH_LIST") == "8.0");
  CHECK(c->variant(*VariantLabel::parse("torch211_cu13")).build_requires.empty());  // no table: an empty one

  ProjectConfig project;
  project.wheelmerge = *c;
  nlohmann::json j = config_json(project);
  CHECK(j["selector"] == "torch");
  CHECK(j["labels"] == nlohmann::json::parse(R"(["torch211_cu13", "torch210_cu12"])"));
  CHECK(j["variants"]["torch210_cu12"]["build-requires"][0] == "torch==2.10.*");

  problems.clear();
  c = parse_yaml_config("variants: [x86_64_v1, x86_64_v3]\nx86_64_v3:\n  env: {CFLAGS: -O3}\n", "w.yaml", problems);
  REQUIRE(c);
  CHECK(c->selector() == Selector::cpu);
  CHECK(c->labels.at(1) == *VariantLabel::parse("x86_64_v3"));
  CHECK(c->variant(*VariantLabel::parse("x86_64_v3")).env.at("CFLAGS") == "-O3");
}

TEST_CASE("cuda = [12, 13] is variants = [cu12, cu13]") {
  Problems problems;
  auto a = parse_toml_config("[tool.wheelmerge]\ncuda = [12, 13]\n", "p.toml", problems);
  auto b = parse_toml_config("[tool.wheelmerge]\nvariants = [\"cu12\", \"cu13\"]\n", "p.toml", problems);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->labels == b->labels);
  CHECK(a->cuda == std::vector<int>{12, 13});
  CHECK(b->cuda.empty());  // as written
  CHECK(chosen_cuda_majors({}, *b) == std::vector<int>{12, 13});
  CHECK(chosen_labels({}, *b) == b->labels);
}

TEST_CASE("cuda and variants together are refused") {
  Problems problems;
  CHECK_FALSE(
      parse_toml_config("[tool.wheelmerge]\ncuda = [12, 13]\nvariants = [\"cu12\", \"cu13\"]\n", "p.toml", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "\"cuda\" and \"variants\" both name the builds");
  CHECK(problems[0].file == "p.toml:2:8");
  CHECK(problems[0].kind == ProblemKind::usage);
}

TEST_CASE("bad labels in variants and as tables") {
  for (const char* bad :
       {"cu", "cu012", "torch2_cu12", "torch210", "torch210_cu", "x86_64_v5", "x86_64_v0", "avx2", "CU12"}) {
    CAPTURE(bad);
    Problems problems;
    CHECK_FALSE(parse_yaml_config(std::string("variants: [") + bad + ", x86_64_v3]\n", "w.yaml", problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "\"variants\" lists variant labels");
    CHECK(problems[0].found == std::string("\"") + bad + "\"");
    CHECK(problems[0].file == "w.yaml:1:12");
    problems.clear();
    CHECK_FALSE(parse_yaml_config(std::string(bad) + ":\n  env: {A: b}\n", "w.yaml", problems));
    CHECK(problems.at(0).what == "unknown key \"" + std::string(bad) + "\"");
  }
  Problems problems;
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\nvariants = [\"x86_64_v2\", \"x86_64_v2\"]\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"variants\" lists a label twice");
  problems.clear();
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\nvariants = \"cu12\"\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"variants\" must be an array");
  problems.clear();
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\nvariants = [12]\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"variants\" must be a string");
}

TEST_CASE("one selector across variants and tables") {
  Problems problems;
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge]\nvariants = [\"cu12\", \"x86_64_v3\"]\n", "p.toml", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "variant labels of different selectors in the configuration");
  CHECK(problems[0].expected == "cuda labels only, as cu12 is");
  CHECK(problems[0].found == "x86_64_v3 (selector cpu)");
  problems.clear();
  // A table of another selector than the builds is a mistake too.
  CHECK_FALSE(
      parse_toml_config("[tool.wheelmerge]\ncuda = [12, 13]\n[tool.wheelmerge.torch210_cu12]\n"
                        "build-requires = [\"torch==2.10.*\"]\n",
                        "p.toml", problems));
  CHECK(problems.at(0).found == "torch210_cu12 (selector torch)");
  problems.clear();
  CHECK_FALSE(parse_yaml_config("x86_64_v2: {env: {A: b}}\ncu12: {env: {A: c}}\n", "w.yaml", problems));
  CHECK(problems.at(0).what == "variant labels of different selectors in the configuration");
}

TEST_CASE("build-requires are PEP 508 requirements") {
  Problems problems;
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge.x86_64_v3]\nbuild-requires = [\"ok>=1\", \"torch==\", \"a b\"]\n",
                                "p.toml", problems));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].what.starts_with(
      "\"x86_64_v3.build-requires\" lists PEP 508 requirements, and this is none (column "));
  CHECK(problems[0].expected == "a PEP 508 requirement");
  CHECK(problems[0].found == "\"torch==\"");
  CHECK(problems[0].file == "p.toml:2:28");
  CHECK(problems[1].found == "\"a b\"");
  problems.clear();
  CHECK_FALSE(parse_toml_config("[tool.wheelmerge.cu12]\nbuild-requires = \"torch\"\n", "p.toml", problems));
  CHECK(problems.at(0).what == "\"cu12.build-requires\" must be an array");
  problems.clear();
  CHECK_FALSE(parse_yaml_config("cu12:\n  build-require: [torch]\n", "w.yaml", problems));
  CHECK(problems.at(0).expected == "toolkit, env or build-requires");
}

TEST_CASE("which labels: the command line's, else the configuration's, else cu12 and cu13") {
  BuildConfig config;
  auto names = [](const std::vector<VariantLabel>& labels) {
    std::vector<std::string> out;
    for (const VariantLabel& l : labels) out.push_back(l.str());
    return out;
  };
  CHECK(names(chosen_labels({}, config)) == std::vector<std::string>{"cu12", "cu13"});
  CHECK(config.selector() == Selector::cuda);
  config.labels = {VariantLabel::cpu(3), VariantLabel::cpu(1)};
  CHECK(names(chosen_labels({}, config)) == std::vector<std::string>{"x86_64_v3", "x86_64_v1"});
  CHECK(chosen_cuda_majors({}, config) == std::vector<int>{12, 13});  // no cuda labels: the default majors
  CHECK(names(chosen_labels({VariantLabel::cpu(2)}, config)) == std::vector<std::string>{"x86_64_v2"});
}
