#include "merger/metadata.hpp"

#include "merger/text.hpp"
#include "merger/wheel_name.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace wm {

namespace {
bool varies_per_build(std::string_view key) {
  return iequals(key, "Version") || iequals(key, "Requires-Dist");
}

// What makes two requirements the same for pip: the normalised name, the extras and the
// specifiers as sets, the URL and the marker.
std::string requirement_key(const Requirement& r) {
  std::vector<std::string> extras;
  for (const std::string& e : r.extras) extras.push_back(normalize_name(e));
  std::sort(extras.begin(), extras.end());
  extras.erase(std::unique(extras.begin(), extras.end()), extras.end());
  std::vector<std::string> specifiers = split(r.specifier, ',');
  std::erase(specifiers, "");
  std::sort(specifiers.begin(), specifiers.end());
  return fmt::format("{}[{}]{}@{};{}", normalize_name(r.name), fmt::join(extras, ","), fmt::join(specifiers, ","), r.url,
                     r.marker ? marker_to_string(*r.marker) : "");
}

bool mentions_extra(const MarkerExpr& marker) {
  if (marker.kind != MarkerExpr::Kind::Compare)
    return std::any_of(marker.children.begin(), marker.children.end(), [](const MarkerPtr& c) { return mentions_extra(*c); });
  return (marker.lhs.is_variable && marker.lhs.text == "extra") || (marker.rhs.is_variable && marker.rhs.text == "extra");
}
}  // namespace

std::optional<MergedMetadata> merge_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                             Problems& problems) {
  const Wheel& first = *wheels.front();
  const std::string member = "METADATA";
  const size_t before = problems.size();

  // Everything but Version and Requires-Dist must be the same in every build.
  auto fixed_fields = [](const Wheel& w) {
    std::vector<Header> out;
    for (const Header& h : w.metadata.fields)
      if (!varies_per_build(h.key)) out.push_back(h);
    return out;
  };
  const std::vector<Header> reference = fixed_fields(first);
  for (const Wheel* w : wheels) {
    if (w == &first) continue;
    std::vector<Header> other = fixed_fields(*w);
    if (other != reference) {
      // Name the first field that differs.
      size_t i = 0;
      while (i < reference.size() && i < other.size() && reference[i] == other[i]) ++i;
      std::string key = i < reference.size() ? reference[i].key : other[i].key;
      auto show = [&](const std::vector<Header>& fields, const Wheel& in) {
        std::vector<std::string> values;
        for (const Header& h : fields)
          if (iequals(h.key, key)) values.push_back('"' + h.value + '"');
        return fmt::format("{} in {}", values.empty() ? "no " + key : fmt::format("{}", fmt::join(values, ", ")),
                           in.display);
      };
      problems.push_back({ProblemKind::conflict, first.display + ", " + w->display, member,
                          fmt::format("METADATA field {} differs between builds", key),
                          show(reference, first), show(other, *w)});
    }
    if (w->metadata.body != first.metadata.body)
      problems.push_back({ProblemKind::conflict, first.display + ", " + w->display, member,
                          "METADATA description differs between builds", "the same text", "different text"});
  }
  if (problems.size() != before) return std::nullopt;

  // Requirements every build shares stay as they are; the others become per-label extras.
  // Compared by canonical text, counted in hash maps: linear in the number of requirements.
  std::vector<std::vector<std::string>> keys(wheels.size());  // per build, per requirement
  std::unordered_map<std::string, size_t> builds_with;        // key -> builds having it
  for (size_t i = 0; i < wheels.size(); ++i) {
    std::unordered_set<std::string> own;
    for (const Requirement& r : wheels[i]->requires_dist) {
      keys[i].push_back(requirement_key(r));
      if (own.insert(keys[i].back()).second) ++builds_with[keys[i].back()];
    }
  }
  auto shared = [&](const std::string& key) { return builds_with.at(key) == wheels.size(); };
  std::vector<std::string> merged;
  const std::vector<std::string> first_texts = first.metadata.all("Requires-Dist");  // as written
  for (size_t k = 0; k < keys.front().size(); ++k)
    if (shared(keys.front()[k])) merged.push_back(first_texts[k]);
  MergedMetadata result;
  std::vector<std::string> extras = first.metadata.all("Provides-Extra");
  std::unordered_set<std::string> extra_names(extras.begin(), extras.end());
  for (size_t i = 0; i < wheels.size(); ++i) {
    const Wheel* w = wheels[i];
    bool any = false;
    for (size_t k = 0; k < w->requires_dist.size(); ++k) {
      const Requirement& r = w->requires_dist[k];
      if (shared(keys[i][k])) continue;
      if (r.marker && mentions_extra(*r.marker)) {
        problems.push_back({ProblemKind::conflict, w->display, w->dist_info + "/METADATA",
                            "a requirement that depends on an extra differs between builds",
                            "the same requirement in every build, or one without an extra marker", r.to_string()});
        continue;
      }
      std::string conditional = require_for_extra(r, w->label).to_string();
      if (conditional.size() > kMaxRequirementBytes) {
        problems.push_back({ProblemKind::conflict, w->display, w->dist_info + "/METADATA",
                            "a requirement made conditional on its build's extra would pass the length limit",
                            fmt::format("at most {} bytes", kMaxRequirementBytes), fmt::format("{} bytes", conditional.size())});
        continue;
      }
      merged.push_back(std::move(conditional));
      any = true;
    }
    if (any) {
      result.label_extras.push_back(w->label);
      if (extra_names.insert(w->label).second) extras.push_back(w->label);
    }
  }
  if (problems.size() != before) return std::nullopt;

  // The first build's fields in order; the extras and requirements as one block where they
  // first appeared (or at the end).
  Headers out;
  bool block_done = false;
  auto emit_block = [&] {
    for (const std::string& e : extras) out.fields.push_back({"Provides-Extra", e});
    for (const std::string& r : merged) out.fields.push_back({"Requires-Dist", r});
    block_done = true;
  };
  for (const Header& h : first.metadata.fields) {
    bool in_block = iequals(h.key, "Requires-Dist") || iequals(h.key, "Provides-Extra");
    if (in_block) {
      if (!block_done) emit_block();
      continue;
    }
    out.fields.push_back(iequals(h.key, "Version") ? Header{h.key, version} : h);
  }
  if (!block_done) emit_block();
  out.body = first.metadata.body;
  result.text = out.to_string();
  if (result.text.size() > kMaxMetadataFile) {
    problems.push_back({ProblemKind::conflict, first.display, first.dist_info + "/METADATA",
                        "the merged METADATA would pass the size limit", fmt::format("at most {} bytes", kMaxMetadataFile),
                        fmt::format("{} bytes", result.text.size())});
    return std::nullopt;
  }
  return result;
}

}  // namespace wm
