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
