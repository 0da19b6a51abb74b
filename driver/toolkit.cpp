#include "driver/toolkit.hpp"

#include "driver/process.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>

#include <unistd.h>

namespace wm {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> version_from_json(const fs::path& root) {
  auto text = read_file((root / "version.json").string());
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("cuda") || !j["cuda"].contains("version")) return std::nullopt;
  return j["cuda"]["version"].get<std::string>();
}

std::optional<std::string> version_from_header(const fs::path& root) {
  auto text = read_file((root / "include" / "cuda.h").string());
  if (!text) return std::nullopt;
  std::smatch m;
  static const std::regex define(R"(#define\s+CUDA_VERSION\s+(\d{4,6})\b)");
  if (!std::regex_search(*text, m, define)) return std::nullopt;
  int v = std::stoi(m[1]);
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::optional<std::string> version_from_nvcc(const fs::path& root) {
  fs::path nvcc = root / "bin" / "nvcc";
  if (!fs::exists(nvcc)) return std::nullopt;
  // Run directly, not through a shell: the root is the user's path, quotes and all.
  std::string error;
  std::optional<std::string> dir = make_temp_directory("wheelmerge-nvcc", error);
  if (!dir) return std::nullopt;  // no version from nvcc: the toolkit's version.json or cuda.h says it
  const std::string log = *dir + "/nvcc.log";
  int rc = run_logged({nvcc.string(), "--version"}, current_environment(), fs::current_path().string(), log, error);
  std::string out = rc == 0 ? read_file(log).value_or("") : std::string();
  std::error_code ignored;
  fs::remove_all(*dir, ignored);
  std::smatch m;
  static const std::regex release(R"(release [0-9.]+, V([0-9.]+))");
  if (!std::regex_search(out, m, release)) return std::nullopt;
  return m[1];
}

std::string env_or(const ToolkitHints& hints, const std::string& key) {
  auto it = hints.env.find(key);
  return it == hints.env.end() ? std::string() : it->second;
}

}  // namespace

std::optional<Toolkit> read_toolkit(const std::string& root, std::string& why) {
  if (!fs::is_directory(root)) {
    why = "no directory";
    return std::nullopt;
  }
  Toolkit t;
  t.root = fs::canonical(root).string();
  if (auto v = version_from_json(root)) {
    t.version = *v;
    t.version_source = "version.json";
  } else if (auto h = version_from_header(root)) {
    t.version = *h;
    t.version_source = "include/cuda.h";
  } else if (auto n = version_from_nvcc(root)) {
    t.version = *n;
    t.version_source = "bin/nvcc --version";
  } else {
    why = "no version.json, include/cuda.h or bin/nvcc to read a version from";
    return std::nullopt;
  }
  static const std::regex version(R"(\d{1,3}(\.\d{1,6})*)");
  if (!std::regex_match(t.version, version)) {
    why = "the version \"" + t.version + "\" (from " + t.version_source + "), which is not a CUDA version";
    return std::nullopt;
  }
  t.major = std::stoi(t.version.substr(0, t.version.find('.')));
  return t;
}

namespace {

using Candidates = std::vector<std::pair<std::string, std::string>>;  // (rule, root)

// The roots the user named for `major`, in order of precedence: anything else there is an error.
Candidates explicit_roots(int major, const ToolkitHints& hints) {
  Candidates roots;
  if (auto it = hints.command_line.find(major); it != hints.command_line.end())
    roots.emplace_back(fmt::format("--cuda {}=PATH", major), it->second);
  if (std::string env = env_or(hints, fmt::format("WHEELMERGE_CUDA_{}", major)); !env.empty())
    roots.emplace_back(fmt::format("WHEELMERGE_CUDA_{}", major), env);
  if (auto it = hints.config.find(major); it != hints.config.end() && !it->second.empty()) {
    auto table = hints.config_table.find(major);
    std::string label = table == hints.config_table.end() ? VariantLabel::cuda(major).str() : table->second;
    roots.emplace_back(fmt::format("[tool.wheelmerge.{}] toolkit", label), it->second);
  }
  return roots;
}

// "cuda-13.10" -> 13, 10: versions compared as numbers (a piece that is not one is -1).
std::vector<int> directory_version(const fs::path& p) {
  std::string v = p.filename().string().substr(5);
  std::vector<std::string> pieces = split(v, '.');
  if (pieces.back().empty()) pieces.pop_back();  // "13." is 13
  std::vector<int> parts;
  for (const std::string& part : pieces) {
    bool number = !part.empty() && part.size() <= 6 && part.find_first_not_of("0123456789") == std::string::npos;
    parts.push_back(number ? std::stoi(part) : -1);
  }
  return parts;
}

// Where discovery looks for `major`, in order: CUDA_HOME, CUDA_PATH, search_root/cuda-N.* newest
// first, the first nvcc on PATH. `looked` gets the places that offered nothing.
Candidates discovery_candidates(int major, const ToolkitHints& hints, std::vector<std::string>& looked) {
  Candidates candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string v = env_or(hints, var); !v.empty()) candidates.emplace_back(var, v);
  std::vector<fs::path> versioned;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(hints.search_root, ec)) {
    std::string name = entry.path().filename().string();
    if (name == fmt::format("cuda-{}", major) || name.starts_with(fmt::format("cuda-{}.", major)))
      versioned.push_back(entry.path());
  }
  // Newest first, comparing versions as numbers: cuda-13.10 is newer than cuda-13.9.
  std::sort(versioned.begin(), versioned.end(),
            [&](const fs::path& a, const fs::path& b) { return directory_version(a) > directory_version(b); });
  for (const fs::path& p : versioned)
    candidates.emplace_back(hints.search_root + "/cuda-" + std::to_string(major) + ".*", p.string());
  if (versioned.empty()) looked.push_back(fmt::format("no {}/cuda-{}.*", hints.search_root, major));
  for (const std::string& dir : path_list(env_or(hints, "PATH"))) {
    fs::path nvcc = fs::path(dir) / "nvcc";
    if (fs::exists(nvcc, ec)) {
      candidates.emplace_back("nvcc on PATH", fs::weakly_canonical(nvcc).parent_path().parent_path().string());
      break;
    }
  }
  if (candidates.empty() || candidates.back().first != "nvcc on PATH") looked.push_back("no nvcc on PATH");
  return candidates;
}

}  // namespace

ToolkitHints toolkit_hints(const std::map<int, std::string>& command_line, const BuildConfig& config,
                           const std::string& project_dir, std::map<std::string, std::string> env,
                           const VariantLabel* only) {
  ToolkitHints hints;
  hints.command_line = command_line;
  for (const auto& [label, v] : config.variants) {
    if (v.toolkit.empty() || label.cuda_major() == 0 || (only && !(label == *only))) continue;
    hints.config[label.cuda_major()] = (fs::path(project_dir) / v.toolkit).lexically_normal().string();
    hints.config_table[label.cuda_major()] = label.str();
  }
  hints.env = std::move(env);
  if (only) hints.label = only->str();
  return hints;
}

std::optional<Toolkit> find_toolkit(int major, const ToolkitHints& hints, Problems& problems) {
  // Explicit: the user named this root for this major, so anything else there is an error.
  for (const auto& [rule, root] : explicit_roots(major, hints)) {
    std::string why;
    auto t = read_toolkit(root, why);
    if (!t) {
      problems.push_back({ProblemKind::usage,
                          root,
                          {},
                          fmt::format("no CUDA toolkit at the path {} names", rule),
                          "a toolkit root",
                          why});
      return std::nullopt;
    }
    if (t->major != major) {
      problems.push_back({ProblemKind::usage,
                          root,
                          {},
                          fmt::format("the toolkit {} names is of another major", rule),
                          fmt::format("CUDA {}", major),
                          fmt::format("CUDA {} (from {})", t->version, t->version_source)});
      return std::nullopt;
    }
    t->found_by = rule;
    return t;
  }

  // Discovery: candidates of another major are passed over.
  std::vector<std::string> looked;
  for (const auto& [rule, root] : discovery_candidates(major, hints, looked)) {
    std::string why;
    auto t = read_toolkit(root, why);
    if (t && t->major == major) {
      t->found_by = rule;
      return t;
    }
    looked.push_back(fmt::format("{} from {} ({})", root, rule, t ? "CUDA " + t->version : why));
  }
  problems.push_back(
      {ProblemKind::usage,
       {},
       {},
       fmt::format("no CUDA {} toolkit found", major),
       fmt::format("a toolkit named by --cuda {0}=PATH, WHEELMERGE_CUDA_{0} or [tool.wheelmerge.{1}] toolkit, or "
                   "one at CUDA_HOME, CUDA_PATH, {2}/cuda-{0}.* or nvcc on PATH",
                   major, hints.label.empty() ? VariantLabel::cuda(major).str() : hints.label, hints.search_root),
       // Every named root was read above (one that is not a toolkit stops there): none was named.
       fmt::format("none named, and none of CUDA {} at the places looked: {}", major, fmt::join(looked, "; "))});
  return std::nullopt;
}

}  // namespace wm
