#include "ci/plan.hpp"

#include "ci/workflow.hpp"
#include "driver/build.hpp"
#include "merger/base/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace wm {

namespace {

constexpr size_t kMaxPythons = 64, kMaxLabels = 256;

class PlanReader {
 public:
  explicit PlanReader(Problems& problems) : problems_(problems) {}

  void refuse(const std::string& input, const std::string& what, std::string expected, std::string found) {
    problems_.push_back({ProblemKind::usage, {}, {}, input + ": " + what, std::move(expected), std::move(found)});
  }

  // The JSON text of an input: a list or an object (an empty one only with `empty_ok`).
  std::optional<nlohmann::json> load(const std::string& input, const std::string& text, bool object, bool empty_ok,
                                     const char* example) {
    auto value = nlohmann::json::parse(text, nullptr, false);
    const char* kind = object ? "object" : "list";
    if (value.is_discarded()) {
      refuse(input, "not JSON", fmt::format("a JSON {} such as {}", kind, example), nlohmann::json(text).dump());
      return std::nullopt;
    }
    if ((object ? !value.is_object() : !value.is_array()) || (value.empty() && !empty_ok)) {
      refuse(input, fmt::format("not a{} JSON {}", empty_ok ? "" : " non-empty", kind),
             fmt::format("a JSON {} such as {}", kind, example), nlohmann::json(text).dump());
      return std::nullopt;
    }
    return value;
  }

  std::vector<std::string> pythons(const nlohmann::json& list) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const nlohmann::json& v : list) {
      if (!v.is_string() || !workflow_python_version(v.get<std::string>())) {
        refuse("python-versions", "not a Python version", "version strings 3.N or 3.Nt, such as \"3.12\" (quoted)",
               v.dump());
        continue;
      }
      if (!seen.insert(v.get<std::string>()).second)
        refuse("python-versions", "a version twice", "each once", v.dump());
      out.push_back(v.get<std::string>());
    }
    return out;
  }

  std::vector<VariantLabel> labels_of(const nlohmann::json& list) {
    std::vector<VariantLabel> out;
    for (const nlohmann::json& v : list) {
      std::string why;
      std::optional<VariantLabel> label = v.is_string() ? VariantLabel::parse(v.get<std::string>(), why) : std::nullopt;
      if (!label) {
        refuse("labels", "not a variant label", "cuNN, torchMmm_cuNN, torchMmmplus_cuNN, torchMmm_cpu or x86_64_vN",
               v.dump());
        continue;
      }
      if (label->selector() != Selector::cpu && label->cuda_major() > 99)
        refuse("labels", "a CUDA major the workflow cannot build", "a major from 1 to 99", label->str());
      out.push_back(*label);
    }
    return out;
  }

  std::vector<VariantLabel> majors_of(const nlohmann::json& list) {
    std::vector<VariantLabel> out;
    for (const nlohmann::json& v : list) {
      const std::string text = v.is_string() ? v.get<std::string>() : v.is_number_unsigned() ? v.dump() : "";
      std::string why;
      std::optional<VariantLabel> label = text.empty() ? std::nullopt : VariantLabel::parse("cu" + text, why);
      if (!label || label->str() != "cu" + text || label->cuda_major() > 99) {
        refuse("cuda-majors", "not a CUDA major", "a major from 1 to 99, such as 12", v.dump());
        continue;
      }
      out.push_back(*label);
    }
    return out;
  }

 private:
  Problems& problems_;
};

// What a label's build and test need from the workflow's maps and settings.
PlanEntry entry_of(PlanReader& r, const VariantLabel& label, const nlohmann::json& versions,
                   const nlohmann::json& indexes, bool container, const std::string& image) {
  PlanEntry e{"", label, "", "", "", "", "", "", "", ""};
  if (label.selector() == Selector::cpu) {
    e.level = std::to_string(label.cpu_level());
    return e;
  }
  if (label.cuda_major() != 0) e.cuda = std::to_string(label.cuda_major());
  if (label.selector() == Selector::torch) {
    const auto [major, minor] = label.torch_version();
    e.torch = fmt::format("{}.{}", major, minor);
    if (label.torch_floor()) e.torch_newest = fmt::format(">={}.{},<{}", major, minor, major + 1);
    const std::string key = e.cuda.empty() ? "cpu" : e.cuda;
    const nlohmann::json found = indexes.contains(key) ? indexes[key] : nlohmann::json();
    const std::string url = found.is_string() ? found.get<std::string>() : "";
    if (!url.starts_with("https://") || url.size() == 8 || url.size() > 2048 ||
        url.find_first_of(" \t\r\n\"'`$\\") != std::string::npos)
      r.refuse("torch-index-urls", fmt::format("no index for {} (label {})", key, label.str()), "an https:// index URL",
               found.dump());
    e.torch_index = url;
  }
  if (e.cuda.empty()) return e;
  const nlohmann::json found = versions.contains(e.cuda) ? versions[e.cuda] : nlohmann::json();
  const std::string version = found.is_string() ? found.get<std::string>() : "";
  const std::vector<std::string> parts = split(version, '.');
  const bool digits = std::all_of(parts.begin(), parts.end(), [](const std::string& p) {
    return !p.empty() && p.size() <= 4 && p.find_first_not_of("0123456789") == std::string::npos;
  });
  if (parts.size() < 2 || parts.size() > 3 || !digits || parts[0] != e.cuda)
    r.refuse("cuda-versions", fmt::format("no toolkit version for CUDA {}", e.cuda),
             fmt::format("{}.MINOR or {}.MINOR.PATCH", e.cuda, e.cuda), found.dump());
  e.cuda_version = version;
  if (container) {
    const size_t at = image.find("{version}");
    if (at == std::string::npos)
      r.refuse("container-image", "no {version} in the image", "an image name with {version}", image);
    else
      e.image = image.substr(0, at) + version + image.substr(at + 9);
  }
  return e;
}

}  // namespace

std::optional<Plan> plan_jobs(const PlanInputs& in, Problems& problems) {
  const size_t before = problems.size();
  PlanReader r(problems);
  Plan plan;
  if (in.builder != "build" && in.builder != "cibuildwheel")
    r.refuse("builder", "not a builder", "build or cibuildwheel", nlohmann::json(in.builder).dump());
  if (in.container != "true" && in.container != "false")
    r.refuse("container", "not a boolean", "true or false", nlohmann::json(in.container).dump());
  plan.cibuildwheel = in.builder == "cibuildwheel";
  const bool container = in.container == "true" && !plan.cibuildwheel;  // cibuildwheel brings its own
  auto pythons = r.load("python-versions", in.python_versions, false, false, "[\"3.12\", \"3.13\"]");
  const bool by_labels = in.labels.find_first_not_of(" \t\r\n") != std::string::npos;
  auto labels = by_labels ? r.load("labels", in.labels, false, false, "[\"cu12\", \"cu13\"]")
                          : r.load("cuda-majors", in.cuda_majors, false, false, "[12, 13]");
  auto versions = r.load("cuda-versions", in.cuda_versions, true, true, "{\"12\": \"12.9.1\"}");
  auto indexes = r.load("torch-index-urls", in.torch_index_urls, true, true,
                        "{\"13\": \"https://download.pytorch.org/whl/cu130\"}");
  if (!pythons || !labels || !versions || !indexes) return std::nullopt;
  if (pythons->size() > kMaxPythons || labels->size() > kMaxLabels) {
    r.refuse(pythons->size() > kMaxPythons ? "python-versions"
             : by_labels                   ? "labels"
                                           : "cuda-majors",
             "more entries than a matrix holds",
             fmt::format("at most {} Python versions and {} labels", kMaxPythons, kMaxLabels),
             std::to_string(std::max(pythons->size(), labels->size())));
    return std::nullopt;
  }
  plan.pythons = r.pythons(*pythons);
  plan.labels = by_labels ? r.labels_of(*labels) : r.majors_of(*labels);
  // The rules of a set of labels are merge's: a plan whose merge job would refuse its builds.
  for (const LabelSetProblem& p : label_set_problems(plan.labels, " for the workflow"))
    r.refuse(by_labels ? "labels" : "cuda-majors", p.what, p.expected, p.found);
  std::vector<PlanEntry> entries;
  for (const VariantLabel& label : plan.labels) {
    if (plan.cibuildwheel && label.selector() != Selector::cuda)
      r.refuse("labels", "builder cibuildwheel builds CUDA labels (cuNN) only", "cuNN labels, or builder build",
               label.str());
    entries.push_back(entry_of(r, label, *versions, *indexes, container, in.container_image));
  }
  if (problems.size() != before) return std::nullopt;
  for (const std::string& python : plan.pythons)
    for (PlanEntry e : entries) {
      e.python = python;
      const bool free_threaded = python.ends_with('t');
      const std::string digits = python.substr(0, python.size() - (free_threaded ? 1 : 0));
      e.cibuildwheel =
          fmt::format("cp{}{}{}-manylinux_*", digits.substr(0, 1), digits.substr(2), free_threaded ? "t" : "");
      plan.jobs.push_back(std::move(e));
    }
  return plan;
}

nlohmann::json plan_outputs(const Plan& plan) {
  nlohmann::json builds = nlohmann::json::array(), tests = nlohmann::json::array();
  for (const PlanEntry& e : plan.jobs) {
    const char* kind = e.label.selector() == Selector::cuda    ? "cuda"
                       : e.label.selector() == Selector::torch ? "torch"
                                                               : "cpu";
    nlohmann::json test = {{"python", e.python},
                           {"label", e.label.str()},
                           {"kind", kind},
                           {"cuda", e.cuda},
                           {"torch", e.torch},
                           {"torch-index", e.torch_index},
                           {"torch-newest", e.torch_newest},
                           {"level", e.level}};
    nlohmann::json build = test;
    build["cuda-version"] = e.cuda_version;
    build["image"] = e.image;
    build["cibuildwheel"] = e.cibuildwheel;
    builds.push_back(std::move(build));
    tests.push_back(std::move(test));
  }
  return {{"build-matrix", {{"include", builds}}},
          {"python-versions", plan.pythons},
          {"labels", label_strings(plan.labels)},
          {"test-matrix", {{"include", tests}}}};
}

std::vector<std::string> plan_lines(const Plan& plan) {
  std::vector<std::string> out;
  for (const PlanEntry& e : plan.jobs) {
    std::vector<std::string> what;
    if (!e.cuda_version.empty()) what.push_back("CUDA " + e.cuda_version);
    if (!e.torch.empty()) what.push_back(fmt::format("torch {}.* from {}", e.torch, e.torch_index));
    if (!e.level.empty()) what.push_back("-march=" + march_value(e.label.cpu_level()));
    const std::string where = !e.image.empty()    ? "in " + e.image
                              : plan.cibuildwheel ? fmt::format("with cibuildwheel ({})", e.cibuildwheel)
                                                  : std::string("on the runner");
    out.push_back(fmt::format("build py{} {}: {}{}{}", e.python, e.label.str(), fmt::join(what, ", "),
                              what.empty() ? "" : " ", where));
  }
  return out;
}

}  // namespace wm
