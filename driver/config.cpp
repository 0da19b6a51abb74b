#include "driver/config.hpp"

#include "driver/process.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/requirement.hpp"

#include <cfloat>
// toml++ asserts FLT_RADIX == 2. With libc++ and the macOS headers under -std=c++20, <math.h>
// includes <float.h> for INFINITY and NAN alone (__need_infinity_nan), and libc++'s include
// guard then keeps <cfloat> from defining the rest (llvm/llvm-project#172539): the compiler's
// own value stands in.
#ifndef FLT_RADIX
#define FLT_RADIX __FLT_RADIX__
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace wm {

namespace {

bool is_environment_name(std::string_view name) { return is_ascii_identifier(name); }

// The schema is walked once, with a small adapter per file format: a Node says what it is and
// where it was written. Every mistake is a usage problem naming its place (file:line:column).
template <typename Node>
struct Walker {
  explicit Walker(Problems& problems) : problems(problems) {}
  Problems& problems;
  size_t failures = 0;

  void fail(const Node& n, std::string what, std::string expected, std::string found) {
    problems.push_back({ProblemKind::usage, n.where(), {}, std::move(what), std::move(expected), std::move(found)});
    ++failures;
  }
  std::optional<std::string> string(const Node& n, const std::string& key) {
    auto s = n.as_string();
    if (!s) {
      fail(n, "\"" + key + "\" must be a string", "a string", n.kind());
    } else if (s->find('\0') != std::string::npos) {  // no program argument or variable holds one
      fail(n, "\"" + key + "\" holds a NUL character", "a string without NUL", *s);
      s.reset();
    }
    return s;
  }
  std::map<std::string, std::string> env(const Node& n, const std::string& key) {
    std::map<std::string, std::string> out;
    if (!n.is_table()) {
      fail(n, "\"" + key + "\" must be a table of environment variables", "a table", n.kind());
      return out;
    }
    for (auto& [name, value] : n.entries()) {
      if (!is_environment_name(name)) {
        // "A=B" or "" would set another variable than the one written, or none.
        fail(value, fmt::format("\"{}\" names an invalid environment variable", key),
             "a POSIX name: letters, digits and _, not starting with a digit", "\"" + name + "\"");
        continue;
      }
      if (auto s = string(value, key + "." + name)) out[name] = *s;
    }
    return out;
  }

  void walk(const Node& root, BuildConfig& config) {
    if (!root.is_table()) {
      fail(root, "the wheelmerge configuration must be a table", "a table", root.kind());
      return;
    }
    std::optional<Node> variants_node, cuda_node;
    for (auto& [key, value] : root.entries()) {
      if (key == "cuda") {
        cuda_node = value;
        cuda(value, config);
      } else if (key == "variants") {
        variants_node = value;
        labels(value, config);
      } else if (key == "backend") {
        if (auto s = string(value, key)) config.backend = *s;
      } else if (key == "backend-path") {
        config.backend_path = strings(value, key);
      } else if (key == "variant-files") {
        config.variant_files = strings(value, key);
      } else if (key == "driver-fallback") {
        if (auto b = boolean(value, key)) config.driver_fallback = *b;
      } else if (key == "runtime-requirements") {
        if (auto b = boolean(value, key)) config.runtime_requirements = *b;
      } else if (key == "env") {
        config.env = env(value, key);
      } else if (auto label = table_label(key)) {
        variant_table(key, value, config.variants[*label]);
      } else {
        fail(value, fmt::format("unknown key \"{}\"", key),
             "variants, cuda, backend, backend-path, variant-files, driver-fallback, runtime-requirements, env or a "
             "variant label "
             "(cuNN, torchMmm_cuNN, x86_64_vN)",
             key);
      }
    }
    if (variants_node && cuda_node)
      fail(*cuda_node, "\"cuda\" and \"variants\" both name the builds",
           "one of them (cuda = [12, 13] is "
           "variants = [\"cu12\", \"cu13\"])",
           "both");
    one_selector(root, config);
  }

  std::optional<bool> boolean(const Node& n, const std::string& key) {
    auto b = n.as_bool();
    if (!b) fail(n, "\"" + key + "\" must be true or false", "a boolean", n.kind());
    return b;
  }

  std::vector<std::string> strings(const Node& n, const std::string& key) {
    std::vector<std::string> out;
    for (const Node& item : n.items(*this, key))
      if (auto s = string(item, key)) out.push_back(*s);
    return out;
  }

  void cuda(const Node& n, BuildConfig& config) {
    std::set<int> seen;
    for (const Node& item : n.items(*this, "cuda")) {
      auto major = item.as_int();
      if (!major || *major < 1 || *major > 99) {
        fail(item, "\"cuda\" lists CUDA majors", "an integer such as 12", item.kind());
      } else if (!seen.insert(static_cast<int>(*major)).second) {
        fail(n, "\"cuda\" lists a major twice", "distinct majors", std::to_string(*major));
      } else {
        config.cuda.push_back(static_cast<int>(*major));
        config.labels.push_back(VariantLabel::cuda(static_cast<int>(*major)));
      }
    }
  }

  void labels(const Node& n, BuildConfig& config) {
    std::set<std::string> seen;
    for (const Node& item : n.items(*this, "variants")) {
      auto text = string(item, "variants");
      if (!text) continue;
      std::string why;
      auto label = VariantLabel::parse(*text, why);
      if (!label || label->str() != *text)
        fail(item, "\"variants\" lists variant labels", label ? label->str() : why, "\"" + *text + "\"");
      else if (!seen.insert(*text).second)
        fail(item, "\"variants\" lists a label twice", "distinct labels", *text);
      else
        config.labels.push_back(*label);
    }
  }

  // The label a [tool.wheelmerge.<key>] table is for: cuNN as it has always been read (one or
  // two digits, "cu05" is cu5), a torch or cpu label as VariantLabel spells it.
  static std::optional<VariantLabel> table_label(const std::string& key) {
    if (key.starts_with("cu")) {
      auto major = parse_cuda_major(std::string_view(key).substr(2));
      return major ? std::optional(VariantLabel::cuda(*major)) : std::nullopt;
    }
    auto label = VariantLabel::parse(key);
    return label && label->str() == key ? label : std::nullopt;
  }

  void variant_table(const std::string& key, const Node& value, VariantConfig& variant) {
    if (!value.is_table()) {
      fail(value, "\"" + key + "\" must be a table", "a table with toolkit, env and build-requires", value.kind());
      return;
    }
    for (auto& [vkey, vvalue] : value.entries()) {
      if (vkey == "toolkit") {
        if (auto s = string(vvalue, key + ".toolkit")) variant.toolkit = *s;
      } else if (vkey == "env") {
        variant.env = env(vvalue, key + ".env");
      } else if (vkey == "build-requires") {
        build_requires(key, vvalue, variant);
      } else {
        fail(vvalue, fmt::format("unknown key \"{}.{}\"", key, vkey), "toolkit, env or build-requires", vkey);
      }
    }
  }

  void build_requires(const std::string& key, const Node& n, VariantConfig& variant) {
    const std::string name = key + ".build-requires";
    for (const Node& item : n.items(*this, name)) {
      auto text = string(item, name);
      if (!text) continue;
      std::string error;
      if (parse_requirement(*text, error))
        variant.build_requires.push_back(*text);
      else
        fail(item, fmt::format("\"{}\" lists PEP 508 requirements, and this is none ({})", name, error),
             "a PEP 508 requirement", "\"" + *text + "\"");
    }
  }

  // The labels named, in `variants` or as a table, held to the rules every command holds a set
  // of labels to (label_set_problems: one kind, torch floors or exact builds, ...), each once.
  void one_selector(const Node& root, const BuildConfig& config) {
    std::vector<VariantLabel> all;
    std::set<std::string> seen;  // a configuration may name many: no quadratic search
    for (const VariantLabel& label : config.labels)
      if (seen.insert(label.str()).second) all.push_back(label);
    for (const auto& [label, _] : config.variants)
      if (seen.insert(label.str()).second) all.push_back(label);
    for (const LabelSetProblem& p : label_set_problems(all, " in the configuration"))
      fail(root, p.what, p.expected, p.found);
  }
};

// toml++ nodes.
struct TomlNode {
  const toml::node* node;
  std::string source;
  std::string where() const {
    const auto& b = node->source().begin;
    return fmt::format("{}:{}:{}", source, b.line, b.column);
  }
  std::string kind() const {
    switch (node->type()) {
      case toml::node_type::table:
        return "a table";
      case toml::node_type::array:
        return "an array";
      case toml::node_type::string:
        return "a string";
      case toml::node_type::integer:
        return "an integer";
      case toml::node_type::floating_point:
        return "a number";
      case toml::node_type::boolean:
        return "a boolean";
      default:
        return "a date or time";
    }
  }
  bool is_table() const { return node->is_table(); }
  std::optional<std::string> as_string() const { return node->value<std::string>(); }
  std::optional<int64_t> as_int() const { return node->is_integer() ? node->value<int64_t>() : std::nullopt; }
  std::optional<bool> as_bool() const { return node->is_boolean() ? node->value<bool>() : std::nullopt; }
  std::vector<std::pair<std::string, TomlNode>> entries() const {
    std::vector<std::pair<std::string, TomlNode>> out;
    for (auto& [k, v] : *node->as_table()) out.emplace_back(std::string(k.str()), TomlNode{&v, source});
    return out;
  }
  std::vector<TomlNode> items(Walker<TomlNode>& w, const std::string& key) const {
    std::vector<TomlNode> out;
    if (!node->is_array()) {
      w.fail(*this, "\"" + key + "\" must be an array", "an array", kind());
      return out;
    }
    for (auto& v : *node->as_array()) out.push_back(TomlNode{&v, source});
    return out;
  }
};

// yaml-cpp nodes.
struct YamlNode {
  YAML::Node node;
  std::string source;
  std::string where() const { return fmt::format("{}:{}:{}", source, node.Mark().line + 1, node.Mark().column + 1); }
  std::string kind() const {
    if (node.IsMap()) return "a mapping";
    if (node.IsSequence()) return "a sequence";
    if (node.IsNull()) return "nothing";
    return "\"" + node.Scalar() + "\"";
  }
  bool is_table() const { return node.IsMap(); }
  std::optional<std::string> as_string() const {
    if (!node.IsScalar()) return std::nullopt;
    return node.Scalar();
  }
  std::optional<int64_t> as_int() const {
    if (!node.IsScalar()) return std::nullopt;
    const std::string& s = node.Scalar();
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) return std::nullopt;
    return std::stoll(s);
  }
  std::optional<bool> as_bool() const {
    if (!node.IsScalar()) return std::nullopt;
    if (node.Scalar() == "true") return true;
    if (node.Scalar() == "false") return false;
    return std::nullopt;
  }
  std::vector<std::pair<std::string, YamlNode>> entries() const {
    std::vector<std::pair<std::string, YamlNode>> out;
    for (const auto& kv : node) out.emplace_back(kv.first.Scalar(), YamlNode{kv.second, source});
    return out;
  }
  std::vector<YamlNode> items(Walker<YamlNode>& w, const std::string& key) const {
    std::vector<YamlNode> out;
    if (!node.IsSequence()) {
      w.fail(*this, "\"" + key + "\" must be a sequence", "a sequence", kind());
      return out;
    }
    for (const auto& v : node) out.push_back(YamlNode{v, source});
    return out;
  }
};

template <typename Node>
std::optional<BuildConfig> walk_config(const Node& root, const std::string& source, Problems& problems) {
  Walker<Node> walker(problems);
  BuildConfig config;
  config.source = source;
  walker.walk(root, config);
  if (walker.failures != 0) return std::nullopt;
  return config;
}

}  // namespace

std::optional<BuildConfig> parse_toml_config(const std::string& text, const std::string& source, Problems& problems,
                                             BuildSystem* build_system, std::string* project_name) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    problems.push_back({ProblemKind::usage,
                        fmt::format("{}:{}:{}", source, e.source().begin.line, e.source().begin.column),
                        {},
                        "not valid TOML",
                        {},
                        std::string(e.description())});
    return std::nullopt;
  }
  if (build_system) {
    if (auto* bs = doc["build-system"].as_table()) {
      if (auto* req = (*bs)["requires"].as_array())
        for (auto& r : *req)
          if (auto s = r.value<std::string>()) build_system->requirements.push_back(*s);
      build_system->backend = (*bs)["build-backend"].value_or(std::string());
      if (auto* path = (*bs)["backend-path"].as_array())
        for (auto& p : *path)
          if (auto s = p.value<std::string>()) build_system->backend_path.push_back(*s);
    }
  }
  if (project_name) *project_name = doc["project"]["name"].value_or(std::string());
  toml::node* table = doc["tool"]["wheelmerge"].node();
  if (!table) {
    BuildConfig empty;
    return empty;
  }
  return walk_config(TomlNode{table, source}, source, problems);
}

namespace {
// Keys given twice in one mapping: yaml-cpp keeps both, PyYAML the last, ruamel.yaml refuses;
// so does wheelmerge, naming each place. Keys that are not scalars are refused too. Aliases
// make a small text a large tree, so the walk is bounded.
bool unique_yaml_keys(const YAML::Node& node, const std::string& source, Problems& problems, size_t& budget) {
  if (budget == 0) {
    problems.push_back({ProblemKind::usage,
                        source,
                        {},
                        "YAML too large",
                        "at most 100000 nodes (aliases counted each time they are used)",
                        "more nodes"});
    return false;
  }
  --budget;
  auto where = [&](const YAML::Node& n) {
    return fmt::format("{}:{}:{}", source, n.Mark().line + 1, n.Mark().column + 1);
  };
  if (node.IsSequence()) {
    for (const auto& item : node)
      if (!unique_yaml_keys(item, source, problems, budget)) return false;
  } else if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        problems.push_back(
            {ProblemKind::usage, where(kv.first), {}, "a YAML key that is not a string", "a string", "a collection"});
        return false;
      }
      if (auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark()); !fresh) {
        problems.push_back(
            {ProblemKind::usage,
             where(kv.first),
             {},
             fmt::format("key \"{}\" given twice", kv.first.Scalar()),
             "each key once in a mapping",
             fmt::format("the key at line {}, column {} as well", it->second.line + 1, it->second.column + 1)});
        return false;
      }
      if (!unique_yaml_keys(kv.second, source, problems, budget)) return false;
    }
  }
  return true;
}
}  // namespace

std::optional<BuildConfig> parse_yaml_config(const std::string& text, const std::string& source, Problems& problems) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    problems.push_back({ProblemKind::usage,
                        fmt::format("{}:{}:{}", source, e.mark.line + 1, e.mark.column + 1),
                        {},
                        "not valid YAML",
                        {},
                        e.msg});
    return std::nullopt;
  }
  if (root.IsNull()) {
    BuildConfig empty;
    empty.source = source;
    return empty;
  }
  size_t budget = 100000;
  if (!unique_yaml_keys(root, source, problems, budget)) return std::nullopt;
  return walk_config(YamlNode{root, source}, source, problems);
}

std::optional<ProjectConfig> load_project_config(const std::string& project_dir, Problems& problems) {
  namespace fs = std::filesystem;
  const fs::path pyproject = fs::path(project_dir) / "pyproject.toml";
  const fs::path yaml = fs::path(project_dir) / "wheelmerge.yaml";
  ProjectConfig project;
  auto text = read_file(pyproject.string());
  if (!text) {
    problems.push_back({ProblemKind::usage,
                        pyproject.string(),
                        {},
                        "no pyproject.toml",
                        "a Python project",
                        "a directory without one"});
    return std::nullopt;
  }
  auto config = parse_toml_config(*text, pyproject.string(), problems, &project.build_system, &project.name);
  if (!config) return std::nullopt;
  if (auto yaml_text = read_file(yaml.string())) {
    if (!config->source.empty()) {
      problems.push_back({ProblemKind::usage,
                          yaml.string(),
                          {},
                          "configuration in two places",
                          "[tool.wheelmerge] or wheelmerge.yaml",
                          "both"});
      return std::nullopt;
    }
    config = parse_yaml_config(*yaml_text, yaml.string(), problems);
    if (!config) return std::nullopt;
  }
  project.wheelmerge = std::move(*config);
  // PEP 517: without build-backend, the legacy setuptools backend.
  if (project.build_system.backend.empty()) project.build_system.backend = "setuptools.build_meta:__legacy__";
  if (project.build_system.requirements.empty() && project.build_system.backend.starts_with("setuptools"))
    project.build_system.requirements = {"setuptools>=40.8.0"};
  return project;
}

Selector BuildConfig::selector() const {
  if (!labels.empty()) return labels.front().selector();
  if (!variants.empty()) return variants.begin()->first.selector();
  return Selector::cuda;
}

const VariantConfig& BuildConfig::variant(const VariantLabel& label) const {
  static const VariantConfig kNone;
  auto it = variants.find(label);
  return it == variants.end() ? kNone : it->second;
}

nlohmann::json config_json(const ProjectConfig& project) {
  const BuildConfig& c = project.wheelmerge;
  nlohmann::json variants = nlohmann::json::object();
  for (const auto& [label, v] : c.variants)
    variants[label.str()] = {{"toolkit", v.toolkit}, {"env", v.env}, {"build-requires", v.build_requires}};
  nlohmann::json labels = nlohmann::json::array();
  for (const VariantLabel& label : c.labels) labels.push_back(label.str());
  return {{"source", c.source},
          {"selector", selector_name(c.selector())},
          {"labels", labels},
          {"cuda", c.cuda},
          {"backend", c.backend},
          {"backend-path", c.backend_path},
          {"variant-files", c.variant_files},
          {"driver-fallback", c.driver_fallback},
          {"runtime-requirements", c.runtime_requirements},
          {"env", c.env},
          {"variants", variants},
          {"build-system",
           {{"requires", project.build_system.requirements},
            {"build-backend", project.build_system.backend},
            {"backend-path", project.build_system.backend_path}}}};
}

std::vector<int> chosen_cuda_majors(const std::vector<int>& given, const BuildConfig& config) {
  if (!given.empty()) return given;
  if (!config.cuda.empty()) return config.cuda;
  std::vector<int> majors;
  for (const VariantLabel& label : config.labels)
    if (label.selector() == Selector::cuda) majors.push_back(label.cuda_major());
  return majors.empty() ? default_cuda_majors() : majors;
}

std::vector<VariantLabel> chosen_labels(const std::vector<VariantLabel>& given, const BuildConfig& config) {
  if (!given.empty()) return given;
  if (!config.labels.empty()) return config.labels;
  std::vector<VariantLabel> labels;
  for (int major : default_cuda_majors()) labels.push_back(VariantLabel::cuda(major));
  return labels;
}

std::optional<int> parse_cuda_major(std::string_view digits) {
  if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return std::stoi(std::string(digits));
}

std::optional<CudaOption> parse_cuda_option(std::string_view value) {
  size_t eq = value.find('=');
  std::string_view major = value.substr(0, eq);
  if (major.starts_with("cu")) major.remove_prefix(2);
  auto parsed = parse_cuda_major(major);
  if (!parsed) return std::nullopt;
  CudaOption option{*parsed, std::nullopt};
  if (eq != std::string_view::npos) option.toolkit = std::string(value.substr(eq + 1));
  return option;
}

std::optional<std::string> take_cuda_options(const std::vector<std::string>& values, std::vector<int>& majors,
                                             std::map<int, std::string>& toolkit_paths) {
  for (const std::string& value : values) {
    auto option = parse_cuda_option(value);
    if (!option || (option->toolkit && option->toolkit->empty())) return value;
    if (option->toolkit)
      toolkit_paths[option->major] = *option->toolkit;
    else
      majors.push_back(option->major);
  }
  if (!majors.empty())
    for (const auto& [major, path] : toolkit_paths)
      if (std::find(majors.begin(), majors.end(), major) == majors.end()) majors.push_back(major);
  return std::nullopt;
}

}  // namespace wm
