#include "metadata.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace wm {

namespace {
std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

bool varies_per_build(std::string_view key) {
  return iequals(key, "Version") || iequals(key, "Requires-Dist");
}
}  // namespace

std::string require_for_extra(std::string_view requirement, std::string_view label) {
  size_t semi = requirement.find(';');
  std::string req = trim(requirement.substr(0, semi));
  std::string extra = fmt::format("extra == \"{}\"", label);
  if (semi == std::string_view::npos || trim(requirement.substr(semi + 1)).empty())
    return fmt::format("{}; {}", req, extra);
  return fmt::format("{}; ({}) and {}", req, trim(requirement.substr(semi + 1)), extra);
}

std::optional<std::string> merge_metadata(const std::vector<const Wheel*>& wheels,
                                          const std::string& version, Problems& problems) {
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
  std::vector<std::vector<std::string>> requires_dist;
  for (const Wheel* w : wheels) requires_dist.push_back(w->metadata.all("Requires-Dist"));
  std::vector<std::string> merged;
  for (const std::string& r : requires_dist.front()) {
    bool everywhere = std::all_of(requires_dist.begin(), requires_dist.end(), [&](const auto& rs) {
      return std::find(rs.begin(), rs.end(), r) != rs.end();
    });
    if (everywhere) merged.push_back(r);
  }
  std::vector<std::string> extras = first.metadata.all("Provides-Extra");
  for (size_t i = 0; i < wheels.size(); ++i) {
    bool any = false;
    for (const std::string& r : requires_dist[i]) {
      if (std::find(merged.begin(), merged.end(), r) != merged.end()) continue;
      merged.push_back(require_for_extra(r, wheels[i]->label));
      any = true;
    }
    if (any && std::find(extras.begin(), extras.end(), wheels[i]->label) == extras.end())
      extras.push_back(wheels[i]->label);
  }

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
  return out.to_string();
}

}  // namespace wm
