// The `ci init` workflow writer over arbitrary option values: validate_workflow_options and
// caller_workflow. The input: byte 0's bits pick the flags (container, cibuildwheel, publish,
// variants, driver fallback); the rest, split at NUL bytes, is the import name, the Python
// versions (comma-separated), the CUDA majors (comma-separated integers), the ref, then one
// variant-file glob per field. Properties:
// - validation refuses with usage problems, each saying what it expected; or
// - the workflow yaml-cpp reads back holds exactly the values given (import name, Python
//   versions as a JSON list, CUDA majors, the globs, the ref after "@"), and no `${{` but the
//   workflow's own two expressions (github.token, github.ref_name), so no value became an
//   expression, a key or a second item.
#include "ci/workflow.hpp"
#include "fuzz_common.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split_at(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t bits = data[0];
  std::vector<std::string> fields = split_at(wm_fuzz::as_text(data + 1, size - 1), '\0');
  while (fields.size() < 4) fields.emplace_back();
  wm::WorkflowOptions o;
  o.cibuildwheel = bits & 2;
  o.container = !o.cibuildwheel && (bits & 1);
  o.publish = bits & 4;
  o.variants = bits & 8;
  o.driver_fallback = bits & 16;
  o.import_name = fields[0];
  for (const std::string& p : split_at(fields[1], ',')) o.python_versions.push_back(p);
  for (const std::string& m : split_at(fields[2], ',')) {
    int major = -1;
    auto [end, ec] = std::from_chars(m.data(), m.data() + m.size(), major);
    if (ec != std::errc() || end != m.data() + m.size()) return 0;  // the CLI refuses these before
    o.cuda_majors.push_back(major);
  }
  o.ref = fields[3];
  o.variant_files.assign(fields.begin() + 4, fields.end());

  wm::Problems problems;
  wm::validate_workflow_options(o, problems);
  if (!problems.empty()) {
    for (const wm::Problem& p : problems)
      FUZZ_CHECK(p.kind == wm::ProblemKind::usage && !p.expected.empty(), "a refusal that says nothing: " + p.what);
    return 0;
  }
  const std::string text = wm::caller_workflow(o);
  for (size_t at = text.find("${{"); at != std::string::npos; at = text.find("${{", at + 1)) {
    std::string_view rest = std::string_view(text).substr(at);
    FUZZ_CHECK(rest.starts_with("${{ github.token }}") || rest.starts_with("${{ github.ref_name }}"),
               "an expression from a value: " + std::string(rest.substr(0, 60)));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    FUZZ_CHECK(false, std::string("the workflow does not parse: ") + e.what());
  }
  const YAML::Node call = root["jobs"]["wheels"];
  const YAML::Node with = call["with"];
  FUZZ_CHECK(call["uses"].as<std::string>().ends_with("@" + o.ref), "the ref changed");
  FUZZ_CHECK(with["import-name"].as<std::string>() == o.import_name, "the import name changed");
  FUZZ_CHECK(nlohmann::json::parse(with["python-versions"].as<std::string>()).get<std::vector<std::string>>() ==
                 o.python_versions,
             "the Python versions changed");
  FUZZ_CHECK(nlohmann::json::parse(with["cuda-majors"].as<std::string>()).get<std::vector<int>>() == o.cuda_majors,
             "the CUDA majors changed");
  if (o.variant_files.empty()) {
    FUZZ_CHECK(!with["variant-files"], "variant-files without globs");
  } else {
    FUZZ_CHECK(split_at(with["variant-files"].as<std::string>(), ' ') == o.variant_files, "the globs changed");
  }
  return 0;
}
