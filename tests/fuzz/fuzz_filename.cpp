// Wheel file names and platform tags. The input's first line is a file name (at most 255
// bytes, as file names are): parse_wheel_filename, then the name the parsed fields give back
// must parse to the same fields. The other lines are platform tag sets ("a.b.c", one per line)
// of two builds, separated by an empty line: merge_platforms must not depend on their order,
// and a merged set must merge with itself to itself.
#include "fuzz_common.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/wheel_name.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

namespace {

using wm::split;

std::string show(const wm::WheelName& w) {
  return fmt::format("name={} version={} build={} python={} abi={} platform={} label={} variant={}", w.name, w.version,
                     w.build, fmt::join(w.python, "."), fmt::join(w.abi, "."), fmt::join(w.platform, "."),
                     w.suffix_label ? w.suffix_label->str() : std::string(), w.variant);
}

void check_filename(std::string_view filename) {
  std::string why;
  auto name = wm::parse_wheel_filename(filename, why);
  if (!name) {
    FUZZ_CHECK(!why.empty(), "refused without saying why");
    return;
  }
  FUZZ_CHECK(why.empty());
  FUZZ_CHECK(!name->name.empty() && !name->version.empty() && wm::is_pep440_version(name->version));
  FUZZ_CHECK(!name->suffix_label || filename.ends_with("." + name->suffix_label->str() + ".whl"));
  FUZZ_CHECK(name->variant.empty() || wm::is_variant_label(name->variant));
  auto tags = name->expanded_tags();
  FUZZ_CHECK(!tags.empty() && std::is_sorted(tags.begin(), tags.end()));

  // What the merged wheel is named from these fields parses back to them.
  std::string rebuilt = name->filename();
  auto again = wm::parse_wheel_filename(rebuilt, why);
  FUZZ_CHECK(again.has_value(), "filename() of a parsed name does not parse: " + wm::printable(rebuilt) + ": " + why);
  FUZZ_CHECK(again->name == name->name && again->version == name->version && again->build == name->build &&
                 again->python == name->python && again->abi == name->abi && again->platform == name->platform &&
                 again->variant == name->variant && !again->suffix_label,
             wm::printable(std::string(filename)) + " parsed as " + wm::printable(show(*name)) + "; " +
                 wm::printable(rebuilt) + " as " + wm::printable(show(*again)));

  // Labels and local versions.
  auto local = wm::local_version_label(name->version);
  const std::string label = local ? local->str() : std::string();
  FUZZ_CHECK(!local || wm::VariantLabel::parse(label) == local);  // its text reads back as the label
  std::string stripped = wm::strip_local_label(name->version);
  FUZZ_CHECK(wm::strip_local_label(stripped) == stripped);
  // A label's local version is the label written with dots for underscores ("+x86.64.v3").
  auto local_label = [&](const std::string& local) {
    auto parsed = wm::VariantLabel::from_local_version(local);
    return parsed ? parsed->str() : std::string();
  };
  FUZZ_CHECK(label.empty() ? stripped == name->version
                           : name->version.starts_with(stripped + "+") &&
                                 local_label(name->version.substr(stripped.size() + 1)) == label);
  std::string normalized = wm::normalize_name(name->name);
  FUZZ_CHECK(wm::normalize_name(normalized) == normalized);
}

void check_platforms(std::string_view rest) {
  std::vector<std::vector<std::string>> inputs(1);
  for (const std::string& line : split(rest, '\n')) {
    if (line.empty()) {
      if (!inputs.back().empty()) inputs.emplace_back();
      continue;
    }
    auto tags = split(line, '.');
    inputs.back().insert(inputs.back().end(), tags.begin(), tags.end());
  }
  if (inputs.back().empty()) inputs.pop_back();
  if (inputs.empty()) return;

  for (const auto& tags : inputs) {
    for (const std::string& tag : tags) {
      wm::PlatformTag p = wm::parse_platform_tag(tag);
      // A tag's canonical form is a fixed point.
      wm::PlatformTag q = wm::parse_platform_tag(p.str());
      FUZZ_CHECK(q.str() == p.str() && q.compatibility_group() == p.compatibility_group(),
                 wm::printable(tag) + " -> " + wm::printable(p.str()) + " -> " + wm::printable(q.str()));
    }
  }

  std::string why;
  auto merged = wm::merge_platforms(inputs, why);
  std::vector<std::vector<std::string>> reversed(inputs.rbegin(), inputs.rend());
  std::string why_reversed;
  auto merged_reversed = wm::merge_platforms(reversed, why_reversed);
  FUZZ_CHECK(merged.has_value() == merged_reversed.has_value(), "merge_platforms depends on the input order");
  if (!merged) {
    FUZZ_CHECK(!why.empty());
    return;
  }
  FUZZ_CHECK(*merged == *merged_reversed, fmt::format("merge_platforms depends on the input order: {} vs {}",
                                                      fmt::join(*merged, " "), fmt::join(*merged_reversed, " ")));
  // Sorted, unless every build carries the very same sequence, which is kept as published.
  bool kept_as_published =
      std::all_of(inputs.begin(), inputs.end(), [&](const auto& tags) { return tags == inputs.front(); }) &&
      *merged == inputs.front();
  FUZZ_CHECK(!merged->empty() && (kept_as_published || std::is_sorted(merged->begin(), merged->end())),
             "merged platform tags neither sorted nor the builds' own sequence");
  auto idempotent = wm::merge_platforms({*merged, *merged}, why);
  FUZZ_CHECK(idempotent && *idempotent == *merged, "merging a merged set with itself changes it");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = wm_fuzz::as_text(data, size);
  size_t eol = text.find('\n');
  std::string_view first = text.substr(0, eol);
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  if (first.size() <= 255) check_filename(first);  // NAME_MAX: longer names cannot reach the engine
  for (std::string_view label : {first, first.substr(0, std::min<size_t>(first.size(), 14))}) {
    // A label prints back from what it parsed to the same text: one spelling per build.
    if (auto parsed = wm::VariantLabel::parse(label)) {
      auto [major, minor] = parsed->torch_version();
      wm::VariantLabel rebuilt = parsed->selector() == wm::Selector::cuda ? wm::VariantLabel::cuda(parsed->cuda_major())
                                 : parsed->selector() == wm::Selector::torch
                                     ? wm::VariantLabel::torch(major, minor, parsed->cuda_major())
                                     : wm::VariantLabel::cpu(parsed->cpu_level());
      FUZZ_CHECK(rebuilt.str() == label, "a label does not print back as it was written");
    }
  }
  check_platforms(rest);
  return 0;
}
