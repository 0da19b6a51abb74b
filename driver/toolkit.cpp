#include "driver/toolkit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace wm {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> slurp(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<std::string> version_from_json(const fs::path& root) {
  auto text = slurp(root / "version.json");
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("cuda") || !j["cuda"].contains("version")) return std::nullopt;
  return j["cuda"]["version"].get<std::string>();
}

std::optional<std::string> version_from_header(const fs::path& root) {
  auto text = slurp(root / "include" / "cuda.h");
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
  std::string command = fmt::format("'{}' --version 2>/dev/null", nvcc.string());
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), pipe)) out += buf.data();
  pclose(pipe);
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
    why = "not a directory";
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
    why = "version \"" + t.version + "\" (from " + t.version_source + ") is not a CUDA version";
    return std::nullopt;
  }
  t.major = std::stoi(t.version.substr(0, t.version.find('.')));
  return t;
}

std::optional<Toolkit> find_toolkit(int major, const ToolkitHints& hints, Problems& problems) {
  std::vector<std::string> looked;
  // Explicit: the user named this root for this major, so anything else there is an error.
  std::vector<std::pair<std::string, std::string>> explicit_roots;
  if (auto it = hints.command_line.find(major); it != hints.command_line.end())
    explicit_roots.emplace_back(fmt::format("--cuda {}=PATH", major), it->second);
  if (std::string env = env_or(hints, fmt::format("WHEELMERGE_CUDA_{}", major)); !env.empty())
    explicit_roots.emplace_back(fmt::format("WHEELMERGE_CUDA_{}", major), env);
  if (auto it = hints.config.find(major); it != hints.config.end() && !it->second.empty())
    explicit_roots.emplace_back(fmt::format("[tool.wheelmerge.cu{}] toolkit", major), it->second);
  for (const auto& [rule, root] : explicit_roots) {
    std::string why;
    auto t = read_toolkit(root, why);
    if (!t) {
      problems.push_back({ProblemKind::usage, root, {}, fmt::format("no CUDA toolkit at the path {} names", rule),
                          "a toolkit root", why});
      return std::nullopt;
    }
    if (t->major != major) {
      problems.push_back({ProblemKind::usage, root, {}, fmt::format("the toolkit {} names is of another major", rule),
                          fmt::format("CUDA {}", major), fmt::format("CUDA {} (from {})", t->version, t->version_source)});
      return std::nullopt;
    }
    t->found_by = rule;
    return t;
  }

  // Discovery: candidates of another major are passed over.
  std::vector<std::pair<std::string, std::string>> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string v = env_or(hints, var); !v.empty()) candidates.emplace_back(var, v);
  std::vector<fs::path> versioned;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(hints.search_root, ec)) {
    std::string name = entry.path().filename().string();
    if (name == fmt::format("cuda-{}", major) || name.rfind(fmt::format("cuda-{}.", major), 0) == 0)
      versioned.push_back(entry.path());
  }
  // Newest first, comparing versions as numbers: cuda-13.10 is newer than cuda-13.9.
  auto version_of = [](const fs::path& p) {
    std::vector<int> parts;
    std::string v = p.filename().string().substr(5);
    for (size_t start = 0; start < v.size();) {
      size_t end = v.find('.', start);
      if (end == std::string::npos) end = v.size();
      std::string part = v.substr(start, end - start);
      bool number = !part.empty() && part.size() <= 6 && part.find_first_not_of("0123456789") == std::string::npos;
      parts.push_back(number ? std::stoi(part) : -1);
      start = end + 1;
    }
    return parts;
  };
  std::sort(versioned.begin(), versioned.end(), [&](const fs::path& a, const fs::path& b) { return version_of(a) > version_of(b); });
  for (const fs::path& p : versioned) candidates.emplace_back(hints.search_root + "/cuda-" + std::to_string(major) + ".*", p.string());
  if (versioned.empty()) looked.push_back(fmt::format("{}/cuda-{}.* (none)", hints.search_root, major));
  std::string path_var = env_or(hints, "PATH");
  for (size_t start = 0; start <= path_var.size();) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    fs::path nvcc = fs::path(path_var.substr(start, end - start)) / "nvcc";
    if (end > start && fs::exists(nvcc, ec)) {
      candidates.emplace_back("nvcc on PATH", fs::weakly_canonical(nvcc).parent_path().parent_path().string());
      break;
    }
    start = end + 1;
  }
  if (candidates.empty() || candidates.back().first != "nvcc on PATH") looked.push_back("nvcc on PATH (none)");
  for (const auto& [rule, root] : candidates) {
    std::string why;
    auto t = read_toolkit(root, why);
    if (t && t->major == major) {
      t->found_by = rule;
      return t;
    }
    looked.push_back(fmt::format("{}: {} ({})", rule, root, t ? "CUDA " + t->version : why));
  }
  problems.push_back({ProblemKind::usage, {}, {}, fmt::format("no CUDA {} toolkit found", major),
                      fmt::format("--cuda {0}=PATH, WHEELMERGE_CUDA_{0}, [tool.wheelmerge.cu{0}] toolkit, or a discoverable toolkit", major),
                      fmt::format("looked at: {}; WHEELMERGE_CUDA_{} unset", fmt::join(looked, "; "), major)});
  return std::nullopt;
}

}  // namespace wm
