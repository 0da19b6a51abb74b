#include "merger/format/wheel_name.hpp"

#include "merger/format/label.hpp"

#include "merger/base/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace wm {

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool tag_chars_ok(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

bool is_pep440_version(std::string_view version) {
  // libstdc++'s matcher recurses per character: a version is bounded before it is matched.
  constexpr size_t kMaxVersionBytes = 1024;
  if (version.size() > kMaxVersionBytes) return false;
  // The specification's own pattern (packaging.version.VERSION_PATTERN), case-insensitive.
  static const std::regex pattern(R"(v?(?:(?:[0-9]+)!)?(?:[0-9]+(?:\.[0-9]+)*))"
                                  R"((?:[-_\.]?(?:alpha|a|beta|b|preview|pre|c|rc)[-_\.]?(?:[0-9]+)?)?)"
                                  R"((?:(?:-(?:[0-9]+))|(?:[-_\.]?(?:post|rev|r)[-_\.]?(?:[0-9]+)?))?)"
                                  R"((?:[-_\.]?(?:dev)[-_\.]?(?:[0-9]+)?)?)"
                                  R"((?:\+(?:[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?)",
                                  std::regex::icase | std::regex::optimize);
  return std::regex_match(version.begin(), version.end(), pattern);
}

bool is_project_name(std::string_view name) {
  // Not std::regex: libstdc++'s matcher recurses once per character, and a long name overflows
  // the stack.
  auto alnum = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return !name.empty() && alnum(name.front()) && alnum(name.back()) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::string normalize_name(std::string_view name) {
  std::string out;
  bool in_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) out += '_';
      in_run = true;
    } else {
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
      in_run = false;
    }
  }
  return out;
}

std::optional<NameSuffixLabel> name_suffix_label(std::string_view name) {
  const std::string normalized = normalize_name(name);
  const size_t sep = normalized.rfind('_');
  if (sep == std::string::npos || sep == 0) return std::nullopt;
  std::string_view suffix = std::string_view(normalized).substr(sep + 1);
  // "cuda12x" and "cuda12" name the major as "cu12" does.
  if (suffix.starts_with("cuda")) {
    suffix.remove_prefix(4);
    if (suffix.ends_with('x')) suffix.remove_suffix(1);
  } else if (suffix.starts_with("cu")) {
    suffix.remove_prefix(2);
  } else {
    return std::nullopt;
  }
  if (!all_digits(suffix)) return std::nullopt;
  auto label = VariantLabel::parse("cu" + std::string(suffix));
  if (!label) return std::nullopt;
  return NameSuffixLabel{normalized.substr(0, sep), *label};
}

std::optional<VariantLabel> local_version_label(std::string_view version) {
  size_t plus = version.find('+');
  if (plus == std::string_view::npos) return std::nullopt;
  return VariantLabel::from_local_version(version.substr(plus + 1));
}

std::string strip_local_label(std::string_view version) {
  if (!local_version_label(version)) return std::string(version);
  return std::string(version.substr(0, version.find('+')));
}

bool is_variant_label(std::string_view label) {
  return !label.empty() && std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '.';
  });
}

// What is wrong with a split wheel name's name, version and tags, or "" when nothing is.
std::string fields_problem(const WheelName& w) {
  if (w.name.empty() || w.version.empty()) return "an empty name or version";
  if (!is_pep440_version(w.version)) return "the version \"" + w.version + "\", which is not a PEP 440 version";
  for (const auto* set : {&w.python, &w.abi, &w.platform})
    for (const std::string& tag : *set)
      if (!tag_chars_ok(tag)) return "the malformed tag \"" + tag + "\"";
  for (const std::string& tag : w.platform)
    if (VariantLabel::parse(tag))  // "any.cu12.whl" would read as a variant label
      return "the platform tag \"" + tag + "\", which reads as a variant label";
  return {};
}

std::optional<WheelName> parse_wheel_filename(std::string_view filename, std::string& why) {
  constexpr std::string_view kExt = ".whl";
  if (filename.size() <= kExt.size() || filename.substr(filename.size() - kExt.size()) != kExt) {
    why = "a name that does not end in .whl";
    return std::nullopt;
  }
  std::string_view stem = filename.substr(0, filename.size() - kExt.size());
  WheelName w;
  std::vector<std::string> parts = split(stem, '-');
  if (parts.size() < 5 || parts.size() > 7) {
    why = fmt::format(
        "a name of {} dash-separated part{} where {{name}}-{{version}}[-{{build}}]-{{python}}-{{abi}}-{{platform}}"
        "[-{{variant}}] has 5 to 7",
        parts.size(), parts.size() == 1 ? "" : "s");
    return std::nullopt;
  }
  w.name = parts[0];
  w.version = parts[1];
  // PEP 825: a variant label is the last component. Six parts are a build tag (which starts
  // with a digit, as no python tag does) or a variant label; seven are both. A last component
  // that reads as a platform tag is one: "pkg-1.0-x-py3-none-linux_x86_64.whl" has a bad build
  // tag, not a variant "linux_x86_64" (a compressed set or a .cuNN suffix: its first tag).
  auto platform_like = [](const std::string& component) {
    const std::string tag = component.substr(0, component.find('.'));
    return tag == "any" || tag.starts_with("win") || parse_platform_tag(tag).family != PlatformTag::Family::other;
  };
  const bool variant =
      parts.size() == 7 ||
      (parts.size() == 6 && !std::isdigit(static_cast<unsigned char>(parts[2].empty() ? '0' : parts[2].front())) &&
       !platform_like(parts.back()));
  // The cuda-python CI convention: a ".cuNN" label after the platform tags. A variant label's
  // dots are its own ("gpu.cu12", as packaging and uv read it): there is no suffix after one.
  if (!variant) {
    std::string& last = parts.back();
    if (size_t dot = last.rfind('.'); dot != std::string::npos) {
      if (auto label = VariantLabel::parse(std::string_view(last).substr(dot + 1))) {
        w.suffix_label = std::move(*label);
        last.resize(dot);
      }
    }
  }
  const bool build = parts.size() == 7 || (parts.size() == 6 && !variant);
  if (build) {
    w.build = parts[2];
    if (w.build.empty() || !std::isdigit(static_cast<unsigned char>(w.build.front()))) {
      why = "the build tag \"" + w.build + "\", which does not start with a digit";
      return std::nullopt;
    }
  }
  if (variant) {
    w.variant = parts.back();
    parts.pop_back();
    if (!is_variant_label(w.variant)) {
      why = "the variant label \"" + w.variant + "\", which is not made of 0-9, a-z, _ and . (PEP 825)";
      return std::nullopt;
    }
  }
  w.python = split(parts[parts.size() - 3], '.');
  w.abi = split(parts[parts.size() - 2], '.');
  w.platform = split(parts[parts.size() - 1], '.');
  why = fields_problem(w);
  if (!why.empty()) return std::nullopt;
  return w;
}

std::vector<std::string> WheelName::expanded_tags() const {
  std::set<std::string> tags;
  for (const auto& py : python)
    for (const auto& abi_tag : abi)
      for (const auto& plat : platform) tags.insert(py + "-" + abi_tag + "-" + plat);
  return {tags.begin(), tags.end()};
}

std::string WheelName::filename() const {
  std::string out = name + "-" + version;
  if (!build.empty()) out += "-" + build;
  out += fmt::format("-{}-{}-{}", fmt::join(python, "."), fmt::join(abi, "."), fmt::join(platform, "."));
  if (!variant.empty()) out += "-" + variant;
  return out + ".whl";
}

PlatformTag parse_platform_tag(std::string_view tag) {
  using F = PlatformTag::Family;
  PlatformTag p;
  static const std::map<std::string_view, std::pair<int, int>> kLegacy = {
      {"manylinux1", {2, 5}}, {"manylinux2010", {2, 12}}, {"manylinux2014", {2, 17}}};
  std::vector<std::string> parts = split(tag, '_');
  auto versioned = [&](F family) -> bool {
    // family_MAJOR_MINOR_ARCH, ARCH may itself contain underscores (x86_64). Versions too large
    // for an int are no versions: such a tag is compared as an opaque one.
    if (parts.size() < 4 || !all_digits(parts[1]) || !all_digits(parts[2]) || parts[1].size() > 6 ||
        parts[2].size() > 6)
      return false;
    p.family = family;
    p.major = std::stoi(parts[1]);
    p.minor = std::stoi(parts[2]);
    p.arch = std::string(tag.substr(parts[0].size() + parts[1].size() + parts[2].size() + 3));
    return true;
  };
  if (auto it = kLegacy.find(parts[0]); it != kLegacy.end() && parts.size() >= 2) {
    p.family = F::manylinux;
    std::tie(p.major, p.minor) = it->second;
    p.arch = std::string(tag.substr(parts[0].size() + 1));
    return p;
  }
  if ((parts[0] == "manylinux" && versioned(F::manylinux)) || (parts[0] == "musllinux" && versioned(F::musllinux)) ||
      (parts[0] == "macosx" && versioned(F::macosx)))
    return p;
  if (parts[0] == "linux" && parts.size() >= 2) {
    p.family = F::linux;
    p.arch = std::string(tag.substr(6));
    return p;
  }
  p.family = F::other;
  p.arch = std::string(tag);
  return p;
}

std::string PlatformTag::str() const {
  switch (family) {
    case Family::manylinux:
      return fmt::format("manylinux_{}_{}_{}", major, minor, arch);
    case Family::musllinux:
      return fmt::format("musllinux_{}_{}_{}", major, minor, arch);
    case Family::macosx:
      return fmt::format("macosx_{}_{}_{}", major, minor, arch);
    case Family::linux:
      return "linux_" + arch;
    case Family::other:
      break;
  }
  return arch;
}

std::string PlatformTag::compatibility_group() const {
  switch (family) {
    case Family::manylinux:
    case Family::linux:
      return "glibc linux " + arch;
    case Family::musllinux:
      return "musl linux " + arch;
    case Family::macosx:
      return "macOS " + arch;
    case Family::other:
      break;
  }
  return arch;
}

namespace {
// Larger is more restrictive. A plain linux tag promises nothing, so it is the most restrictive.
std::pair<int, int> restrictiveness(const PlatformTag& p) {
  if (p.family == PlatformTag::Family::linux) return {1 << 30, 0};
  return {p.major, p.minor};
}
}  // namespace

std::optional<std::vector<std::string>> merge_platforms(const std::vector<std::vector<std::string>>& inputs,
                                                        std::string& why) {
  // Builds that carry the same set keep it exactly (auditwheel's
  // "manylinux_2_24_x86_64.manylinux_2_28_x86_64" is a choice, not something to reduce): in the
  // publisher's order where every build has it, sorted where their orders differ, so that the
  // result never depends on the order of the inputs.
  auto as_set = [](const std::vector<std::string>& tags) { return std::set<std::string>(tags.begin(), tags.end()); };
  if (!inputs.empty() && std::all_of(inputs.begin(), inputs.end(),
                                     [&](const auto& tags) { return as_set(tags) == as_set(inputs.front()); })) {
    if (std::all_of(inputs.begin(), inputs.end(), [&](const auto& tags) { return tags == inputs.front(); }))
      return inputs.front();
    std::set<std::string> sorted = as_set(inputs.front());
    return std::vector<std::string>(sorted.begin(), sorted.end());
  }
  std::optional<std::set<std::string>> groups_first;
  std::map<std::string, PlatformTag> merged;  // group -> most restrictive requirement so far
  for (const auto& tags : inputs) {
    std::map<std::string, PlatformTag> required;  // group -> least restrictive tag of this input
    for (const auto& tag : tags) {
      PlatformTag p = parse_platform_tag(tag);
      auto [it, inserted] = required.emplace(p.compatibility_group(), p);
      if (!inserted && restrictiveness(p) < restrictiveness(it->second)) it->second = p;
    }
    std::set<std::string> groups;
    for (const auto& [group, tag] : required) groups.insert(group);
    if (!groups_first) {
      groups_first = groups;
    } else if (groups != *groups_first) {
      why = fmt::format("platforms {} and {}", fmt::join(*groups_first, ", "), fmt::join(groups, ", "));
      return std::nullopt;
    }
    for (const auto& [group, tag] : required) {
      auto [it, inserted] = merged.emplace(group, tag);
      if (!inserted && restrictiveness(tag) > restrictiveness(it->second)) it->second = tag;
    }
  }
  std::set<std::string> out;
  for (const auto& [group, tag] : merged) out.insert(tag.str());
  return std::vector<std::string>(out.begin(), out.end());
}

}  // namespace wm
