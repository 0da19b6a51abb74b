// Wheel file names and compatibility tags: parsing, the variant label a name carries, and the
// most restrictive platform that several builds share.
#pragma once

#include "merger/format/label.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

struct WheelName {
  std::string name;                                // distribution name as written in the file name
  std::string version;                             // as written, local label included ("1.0+cu12")
  std::string build;                               // build tag, empty when absent
  std::vector<std::string> python, abi, platform;  // the dot-separated tag sets
  std::optional<VariantLabel> suffix_label;        // cu12 from "...-linux_x86_64.cu12.whl"
  std::string variant;  // PEP 825's variant label, the last component: "cu12" from "...-linux_x86_64-cu12.whl"

  // Every python-abi-platform combination, sorted.
  std::vector<std::string> expanded_tags() const;
  std::string filename() const;  // "{name}-{version}[-{build}]-{py}-{abi}-{plat}[-{variant}].whl"
};

// PEP 825's variant label grammar: one or more of 0-9, a-z, "_" and ".".
bool is_variant_label(std::string_view label);

// Parses a file name (no directory). On failure returns nullopt and says why in `why`.
std::optional<WheelName> parse_wheel_filename(std::string_view filename, std::string& why);

// The wheel file name form of a distribution name: lower case, runs of "-_." as one "_".
std::string normalize_name(std::string_view name);

// A project name as PEP 508 allows it: ASCII letters and digits, with "-", "_" and "." inside.
bool is_project_name(std::string_view name);

bool is_pep440_version(std::string_view version);

// A distribution name ending in a CUDA major, as projects that publish one distribution per CUDA
// major spell it: "cupy-cuda12x", "pkg-cuda12", "pkg_cu12" (any case and separator). `base` is
// the name without the suffix, normalized ("cupy"); `label` the build's (cu12).
struct NameSuffixLabel {
  std::string base;
  VariantLabel label;
};
std::optional<NameSuffixLabel> name_suffix_label(std::string_view name);

// The variant label of a "+cuNN" local version ("1.0+cu12" -> cu12), or nullopt.
std::optional<VariantLabel> local_version_label(std::string_view version);
// The version without a "+cuNN" local label ("1.0+cu12" -> "1.0"); others unchanged.
std::string strip_local_label(std::string_view version);

struct PlatformTag {
  enum class Family { manylinux, musllinux, linux, macosx, other } family = Family::other;
  int major = 0, minor = 0;  // glibc, musl or macOS version
  std::string arch;          // for `other`: the whole tag
  std::string str() const;
  // Platforms built for the same C library/OS and machine can be merged.
  std::string compatibility_group() const;
};

// Legacy manylinux aliases are read as their manylinux_2_x forms.
PlatformTag parse_platform_tag(std::string_view tag);

// The platform tags of a merged wheel: the inputs' own when they all carry the same set (in
// the first input's order); else per OS/architecture, the most restrictive of what the inputs
// require (each input requires the least restrictive tag it carries). nullopt with `why`
// when the inputs do not cover the same OS/architecture combinations.
std::optional<std::vector<std::string>> merge_platforms(const std::vector<std::vector<std::string>>& inputs,
                                                        std::string& why);

}  // namespace wm
