#include "ci/workflow.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace wm;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("the caller workflow passes the options to the reusable workflow") {
  WorkflowOptions o;
  o.import_name = "mypkg";
  o.python_versions = {"3.11", "3.12"};
  o.cuda_majors = {12, 13};
  o.ref = "v1";
  std::string text = caller_workflow(o);
  CHECK(text.find("uses: wheelmerge/wheelmerge/.github/workflows/wheelmerge-wheels.yml@v1") != std::string::npos);
  CHECK(text.find("python-versions: '[\"3.11\", \"3.12\"]'") != std::string::npos);
  CHECK(text.find("cuda-majors: \"[12, 13]\"") != std::string::npos);
  CHECK(text.find("publish:") == std::string::npos);
  CHECK(text.find("container: false") != std::string::npos);
  CHECK(text.find("builder:") == std::string::npos);
  o.cibuildwheel = true;
  o.publish = true;
  text = caller_workflow(o);
  CHECK(text.find("builder: cibuildwheel") != std::string::npos);
  CHECK(text.find("container:") == std::string::npos);
  CHECK(text.find("repair-command") == std::string::npos);  // cibuildwheel repairs
}

TEST_CASE("the workflow file: written with its directories, replaced only with force") {
  std::string dir = (fs::temp_directory_path() / "wm_workflow_XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  WorkflowOptions o;
  o.import_name = "mypkg";
  o.python_versions = {"3.12"};
  o.cuda_majors = {12, 13};
  const fs::path file = fs::path(dir) / ".github" / "workflows" / "wheels.yml";
  Problems problems;

  auto written = write_workflow(dir, o, false, problems);
  REQUIRE(written);
  CHECK(problems.empty());
  CHECK(*written == file.string());
  CHECK(slurp(file) == caller_workflow(o));

  std::ofstream(file) << "# mine\n";
  CHECK_FALSE(write_workflow(dir, o, false, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::usage);
  CHECK(problems[0].file == file.string());
  CHECK(problems[0].what == "the workflow already exists");
  CHECK(problems[0].expected == "--force to replace it");
  CHECK(slurp(file) == "# mine\n");

  problems.clear();
  REQUIRE(write_workflow(dir, o, true, problems));
  CHECK(problems.empty());
  CHECK(slurp(file) == caller_workflow(o));

  // A directory where the file would go cannot be written.
  fs::remove(file);
  fs::create_directories(file);
  CHECK_FALSE(write_workflow(dir, o, true, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "cannot write the workflow");
  fs::remove_all(dir);
}

TEST_CASE("workflow values are checked against their grammars before anything is written") {
  WorkflowOptions good;
  good.import_name = "cuda.core";
  good.python_versions = {"3.9", "3.13t"};
  good.cuda_majors = {12, 13};
  good.ref = "refs/tags/v1.2.0-rc.1";
  good.variant_files = {"pkg/*.so", "#x.py", "pkg/[ab]?.py"};
  Problems problems;
  validate_workflow_options(good, problems);
  CHECK(problems.empty());

  auto refused = [&](auto change) {
    WorkflowOptions o = good;
    change(o);
    Problems found;
    validate_workflow_options(o, found);
    REQUIRE(found.size() == 1);
    CHECK(found[0].kind == ProblemKind::usage);
    fs::path dir = fs::temp_directory_path() / "wm_workflow_unit";
    fs::remove_all(dir);
    Problems writing;
    CHECK_FALSE(write_workflow(dir.string(), o, false, writing));
    CHECK_FALSE(fs::exists(dir / ".github"));
    return found[0].what;
  };
  CHECK(refused([](WorkflowOptions& o) { o.import_name = "pkg${{ secrets.X }}"; }) == "invalid import name for the workflow");
  CHECK(refused([](WorkflowOptions& o) { o.import_name = "a..b"; }) == "invalid import name for the workflow");
  CHECK(refused([](WorkflowOptions& o) { o.python_versions = {"3.12\""}; }) == "invalid Python version for the workflow");
  CHECK(refused([](WorkflowOptions& o) { o.python_versions = {"3.12", "3.12"}; }) == "a Python version given twice");
  CHECK(refused([](WorkflowOptions& o) { o.python_versions.clear(); }) == "no Python versions for the workflow");
  CHECK(refused([](WorkflowOptions& o) { o.cuda_majors = {0}; }) == "invalid CUDA major for the workflow");
  CHECK(refused([](WorkflowOptions& o) { o.ref = "main${{ github.token }}"; }) == "invalid --ref");
  CHECK(refused([](WorkflowOptions& o) { o.ref = "../x"; }) == "invalid --ref");
  for (const char* glob : {"a b", "a\tb", "a\nb", "${{ github.token }}", "'x'", "\"x\"", "`id`", "a\\b", "{a,b}", ""})
    CHECK(refused([&](WorkflowOptions& o) { o.variant_files = {glob}; }) == "variant-files glob the workflow cannot carry");
}
