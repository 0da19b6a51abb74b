#include "merger/metadata.hpp"

#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/wheel_name.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace wm {

std::string normalize_extra(std::string_view extra) {
  std::string out = normalize_name(extra);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

namespace {
// An extra name as core metadata has it (PEP 685: the name rule of PEP 508, before
// normalisation), the rule of project names.
bool is_valid_extra_name(std::string_view x) { return is_project_name(x); }

bool varies_per_build(std::string_view key, bool renamed) {
  return iequals(key, "Version") || iequals(key, "Requires-Dist") ||
         (renamed && (iequals(key, "Name") || iequals(key, "Description")));
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
  return fmt::format("{}[{}]{}@{};{}", normalize_name(r.name), fmt::join(extras, ","), fmt::join(specifiers, ","),
                     r.url, r.marker ? marker_to_string(*r.marker) : "");
}

bool mentions_extra(const MarkerExpr& marker) {
  if (marker.kind != MarkerExpr::Kind::Compare)
    return std::any_of(marker.children.begin(), marker.children.end(),
                       [](const MarkerPtr& c) { return mentions_extra(*c); });
  return (marker.lhs.is_variable && marker.lhs.text == "extra") ||
         (marker.rhs.is_variable && marker.rhs.text == "extra");
}

bool depends_on_extra(const Requirement& r) { return r.marker && mentions_extra(*r.marker); }

// Whether `marker` can hold only with some extra requested: false when it may hold with none
// ("python_version >= '3' or extra == 'x'"), whatever the environment.
bool requires_extra(const MarkerExpr& marker) {
  switch (marker.kind) {
    case MarkerExpr::Kind::And:
      return std::any_of(marker.children.begin(), marker.children.end(),
                         [](const MarkerPtr& c) { return requires_extra(*c); });
    case MarkerExpr::Kind::Or:
      return std::all_of(marker.children.begin(), marker.children.end(),
                         [](const MarkerPtr& c) { return requires_extra(*c); });
    case MarkerExpr::Kind::Compare:
      break;
  }
  // `extra == ""` holds with no extra requested.
  return marker.op == "==" && ((marker.lhs.is_variable && marker.lhs.text == "extra" && !marker.rhs.is_variable &&
                                !marker.rhs.text.empty()) ||
                               (marker.rhs.is_variable && marker.rhs.text == "extra" && !marker.lhs.is_variable &&
                                !marker.lhs.text.empty()));
}

// `marker` with each `extra == "X"` replaced by `replace(X)` (X normalized; a null result keeps
// the comparison). An extra compared any other way sets `unsupported`.
MarkerPtr map_extras(const MarkerPtr& marker, const std::function<MarkerPtr(const std::string&)>& replace,
                     bool& unsupported) {
  if (!marker) return marker;
  if (marker->kind != MarkerExpr::Kind::Compare) {
    MarkerPtr out;
    for (const MarkerPtr& child : marker->children) {
      MarkerPtr mapped = map_extras(child, replace, unsupported);
      out = marker->kind == MarkerExpr::Kind::And ? marker_and(out, mapped) : marker_or(out, mapped);
    }
    return out;
  }
  const bool left = marker->lhs.is_variable && marker->lhs.text == "extra";
  const bool right = marker->rhs.is_variable && marker->rhs.text == "extra";
  if (!left && !right) return marker;
  const MarkerOperand& value = left ? marker->rhs : marker->lhs;
  if (marker->op != "==" || value.is_variable || normalize_extra(value.text).empty()) {
    unsupported = true;
    return marker;
  }
  MarkerPtr replaced = replace(normalize_extra(value.text));
  return replaced ? replaced : marker;
}

// The extras `extra == "X"` names in `marker`, normalized, in order.
std::vector<std::string> extras_named(const MarkerPtr& marker, bool& unsupported) {
  std::vector<std::string> out;
  map_extras(
      marker,
      [&](const std::string& x) {
        if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
        return MarkerPtr();
      },
      unsupported);
  return out;
}

// Release segments of versions, compared as PEP 440 does: missing segments are zeros.
using Release = std::vector<long long>;

int compare_release(const Release& a, const Release& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    long long x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

struct Clause {
  std::string op;  // == != <= >= < > ~=
  Release version;
  bool wildcard = false;  // "==2.10.*"
};

bool holds(const Clause& c, const Release& v) {
  auto prefix_matches = [&](const Release& prefix) {
    return compare_release(Release(v.begin(), v.begin() + std::min(v.size(), prefix.size())), prefix) == 0 &&
           (v.size() >= prefix.size() || compare_release(v, prefix) == 0);
  };
  const int cmp = compare_release(v, c.version);
  if (c.op == "==") return c.wildcard ? prefix_matches(c.version) : cmp == 0;
  if (c.op == "!=") return c.wildcard ? !prefix_matches(c.version) : cmp != 0;
  if (c.op == "<=") return cmp <= 0;
  if (c.op == ">=") return cmp >= 0;
  if (c.op == "<") return cmp < 0;
  if (c.op == ">") return cmp > 0;
  // ~=V: >= V and the same release up to V's second-to-last segment.
  return cmp >= 0 && prefix_matches(Release(c.version.begin(), c.version.end() - 1));
}

std::optional<std::vector<Clause>> parse_clauses(std::string_view specifier, std::string& why) {
  std::vector<Clause> clauses;
  for (const std::string& text : split(specifier, ',')) {
    if (text.empty()) continue;
    Clause c;
    for (const char* op : {"===", "~=", "==", "!=", "<=", ">=", "<", ">"}) {
      if (text.starts_with(op)) {
        c.op = op;
        break;
      }
    }
    std::string version = text.substr(c.op.size());
    if (c.op == "===" || c.op.empty()) {
      why =
          fmt::format("\"{}\": {} is not evaluated here", text, c.op.empty() ? "a clause without an operator" : "===");
      return std::nullopt;
    }
    if ((c.op == "==" || c.op == "!=") && version.ends_with(".*")) {
      c.wildcard = true;
      version.resize(version.size() - 2);
    }
    for (const std::string& part : split(version, '.')) {
      if (part.empty() || part.size() > 9 ||
          !std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        why = fmt::format(
            "\"{}\": only release versions (digits and dots) are evaluated here, no epoch, pre-, post-, "
            "dev-release or local part",
            text);
        return std::nullopt;
      }
      c.version.push_back(std::stoll(part));
    }
    if (c.op == "~=" && c.version.size() < 2) {
      why = fmt::format("\"{}\": ~= needs two or more release segments", text);
      return std::nullopt;
    }
    clauses.push_back(std::move(c));
  }
  return clauses;
}
}  // namespace

std::optional<bool> admits_release_series(std::string_view specifier, int major, int minor, std::string& why) {
  auto clauses = parse_clauses(specifier, why);
  if (!clauses) return std::nullopt;
  // What the clauses admit is a finite union of intervals whose ends are the clauses' versions
  // (and the ends of their wildcard prefixes); where it meets the series, it holds the series'
  // first release, or a version at, just above or just below one of those ends.
  const Release first{major, minor}, next{major, minor + 1};
  constexpr long long kHuge = 999999999;
  std::vector<Release> candidates{first};
  size_t depth = 3;  // past every clause's last segment: "just above" lies below every greater end
  for (const Clause& c : *clauses) depth = std::max(depth, c.version.size() + 1);
  for (const Clause& c : *clauses) {
    std::vector<Release> ends{c.version};
    if (c.wildcard || c.op == "~=") {
      Release prefix = c.op == "~=" ? Release(c.version.begin(), c.version.end() - 1) : c.version;
      ends.push_back(prefix);
      ++prefix.back();
      ends.push_back(prefix);
    }
    for (const Release& end : ends) {
      candidates.push_back(end);
      Release above = end;
      above.resize(depth + 1, 0);
      above.back() = 1;
      candidates.push_back(above);
      Release below = end;
      while (!below.empty() && below.back() == 0) below.pop_back();
      if (below.empty()) continue;
      --below.back();
      below.push_back(kHuge);
      candidates.push_back(below);
    }
  }
  return std::any_of(candidates.begin(), candidates.end(), [&](const Release& v) {
    return compare_release(v, first) >= 0 && compare_release(v, next) < 0 &&
           std::all_of(clauses->begin(), clauses->end(), [&](const Clause& c) { return holds(c, v); });
  });
}

std::string series_specifier(std::vector<std::pair<int, int>> series, std::string& why) {
  std::sort(series.begin(), series.end());
  series.erase(std::unique(series.begin(), series.end()), series.end());
  if (series.empty() || series.front().first != series.back().first) {
    why =
        "torch builds of different majors, which one specifier cannot cover without admitting the minors between them";
    return {};
  }
  const int major = series.front().first, low = series.front().second, high = series.back().second;
  std::string out = fmt::format(">={}.{},<{}.{}", major, low, major, high + 1);
  for (int minor = low + 1; minor < high; ++minor)
    if (!std::binary_search(series.begin(), series.end(), std::pair(major, minor)))
      out += fmt::format(",!={}.{}.*", major, minor);
  return out;
}

// A wheel's description in either form core metadata allows: the body, else the older
// `Description:` field, whose lines after the first carry the folding prefix setuptools writes
// (eight spaces, or seven and "|"), removed here as twine and PyPI remove it.
std::string description_text(const Wheel& w) {
  auto field = w.metadata.one("Description");
  if (!w.metadata.body.empty() || !field) return w.metadata.body;
  std::vector<std::string> lines = split(*field, '\n');
  std::string out = lines.front();
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.starts_with("       |"))
      line.remove_prefix(8);
    else
      for (int n = 0; n < 8 && !line.empty() && (line.front() == ' ' || line.front() == '\t'); ++n)
        line.remove_prefix(1);
    out += "\n" + std::string(line);
  }
  return out;
}

namespace {

// A description cut into paragraphs, each with the blank lines after it, so that joining them
// gives the text back byte for byte.
std::vector<std::string> paragraphs(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t at = text.find("\n\n", start);
    size_t end = at == std::string::npos ? text.size() : text.find_first_not_of('\n', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

// `text` as a `Description:` field's value: every line after the first folded with eight spaces.
std::string folded_description(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "        ";
  }
  while (out.ends_with("\n        ")) out.resize(out.size() - 9);  // no trailing blank continuation
  return out;
}

// The description of distributions of different names merged under --name: each describes
// itself ("a CuPy wheel for CUDA 12.x ... pip install cupy-cuda12x[ctk]"), so neither is the
// merged one's. The paragraphs every build shares at the start and the end are kept once;
// between them, each build's own paragraphs, introduced by a paragraph naming the build.
// Each build's description is read in whichever form it has (description_text).
std::string merged_description(const std::vector<const Wheel*>& wheels) {
  std::vector<std::vector<std::string>> texts;
  for (const Wheel* w : wheels) texts.push_back(paragraphs(description_text(*w)));
  if (std::all_of(texts.begin(), texts.end(), [&](const auto& t) { return t == texts.front(); }))
    return description_text(*wheels.front());
  size_t shortest = texts.front().size();
  for (const auto& t : texts) shortest = std::min(shortest, t.size());
  auto same_at = [&](auto index) {
    return std::all_of(texts.begin(), texts.end(), [&](const auto& t) { return index(t) == index(texts.front()); });
  };
  size_t head = 0, tail = 0;
  while (head < shortest && same_at([&](const auto& t) { return t[head]; })) ++head;
  while (tail < shortest - head && same_at([&](const auto& t) { return t[t.size() - 1 - tail]; })) ++tail;
  std::string out;
  auto separate = [&] {  // a blank line before the next paragraph
    if (out.empty()) return;
    while (!out.ends_with("\n\n")) out += '\n';
  };
  for (size_t i = 0; i < head; ++i) out += texts.front()[i];
  for (size_t b = 0; b < wheels.size(); ++b) {
    if (texts[b].size() == head + tail) continue;
    separate();
    out += fmt::format("For the {} build (from {} {}):\n\n", wheels[b]->build_label().str(),
                       wheels[b]->metadata.one("Name").value_or(""), wheels[b]->metadata.one("Version").value_or(""));
    for (size_t i = head; i < texts[b].size() - tail; ++i) out += texts[b][i];
  }
  if (tail > 0) separate();
  for (size_t i = texts.front().size() - tail; i < texts.front().size(); ++i) out += texts.front()[i];
  return out;
}

bool is_torch_requirement(const Requirement& r) { return normalize_name(r.name) == "torch" && !depends_on_extra(r); }

// For builds of the torch selector: the one torch requirement that replaces every build's own
// (see metadata.hpp); nullopt for other selectors, or with problems.
std::optional<Requirement> combined_torch_requirement(const std::vector<const Wheel*>& wheels, Problems& problems) {
  std::vector<std::pair<int, int>> series;
  size_t floors = 0;
  for (const Wheel* w : wheels) {
    const VariantLabel& label = w->build_label();
    if (label.selector() != Selector::torch) return std::nullopt;
    series.push_back(label.torch_version());
    floors += label.torch_floor();
  }
  const size_t before = problems.size();
  {  // the rules every command holds a set of labels to (label_set_problems)
    std::vector<VariantLabel> labels;
    for (const Wheel* w : wheels) labels.push_back(w->build_label());
    const auto broken = label_set_problems(labels, " in one merge");
    for (const LabelSetProblem& p : broken)
      problems.push_back({ProblemKind::usage, wheels.front()->display, {}, p.what, p.expected, p.found});
    if (!broken.empty()) return std::nullopt;
  }
  std::optional<Requirement> found;  // the first build's torch requirement, for its extras and marker
  std::string found_key;
  for (size_t i = 0; i < wheels.size(); ++i) {
    const Wheel& w = *wheels[i];
    for (const Requirement& r : w.requires_dist) {
      if (!is_torch_requirement(r)) continue;
      const std::string member = w.dist_info + "/METADATA";
      std::string why;
      auto admits = admits_release_series(r.specifier, series[i].first, series[i].second, why);
      if (!r.url.empty()) {
        problems.push_back({ProblemKind::conflict, w.display, member,
                            "a torch requirement by URL cannot cover several builds", "a torch requirement by version",
                            r.to_string()});
      } else if (!admits) {
        problems.push_back({ProblemKind::conflict, w.display, member, "cannot evaluate the build's torch requirement",
                            "version specifiers on release segments (==, !=, <, <=, >, >=, ~=, ==X.*)",
                            fmt::format("{} ({})", r.to_string(), why)});
      } else if (!*admits) {
        problems.push_back({ProblemKind::conflict, w.display, member,
                            "the build's torch requirement excludes the torch its label names",
                            fmt::format("a requirement admitting torch {}.{} (label {})", series[i].first,
                                        series[i].second, w.build_label().str()),
                            r.to_string()});
      }
      Requirement rest = r;
      rest.specifier.clear();
      if (!found) {
        found = rest;
        found_key = requirement_key(rest);
      } else if (requirement_key(rest) != found_key) {
        problems.push_back({ProblemKind::conflict, w.display, member,
                            "torch requirements differ between builds in more than their versions",
                            found->to_string() + " with a version specifier",
                            rest.to_string() + " with a version specifier"});
      }
    }
  }
  std::string why;
  // Floor builds admit every torch of their major from the lowest floor on, as the loader
  // does (torch's stable ABI holds across minors, not majors); the loader picks among them.
  const auto lowest = *std::min_element(series.begin(), series.end());
  std::string specifier = floors != 0 ? fmt::format(">={}.{},<{}", lowest.first, lowest.second, lowest.first + 1)
                                      : series_specifier(series, why);
  if (specifier.empty())
    problems.push_back({ProblemKind::conflict, wheels.front()->display, "METADATA",
                        "cannot cover the builds' torch versions in one requirement", "torch builds of one major",
                        why});
  if (problems.size() != before) return std::nullopt;
  Requirement combined = found.value_or(Requirement{"torch", {}, {}, {}, nullptr});
  combined.specifier = specifier;
  return combined;
}

// A build's extra for its requirements of extra `x`: "ctk" of cu12 is "ctk-cu12".
std::string per_build_extra(const std::string& x, const VariantLabel& label) {
  return normalize_extra(x + "-" + label.str());
}

// The conflict of a fixed field that differs between `first` and `other`: the first field
// that differs, and the values each build has for it.
Problem fixed_field_conflict(const Wheel& first, const std::vector<Header>& reference, const Wheel& other,
                             const std::vector<Header>& fields) {
  size_t i = 0;
  while (i < reference.size() && i < fields.size() && reference[i] == fields[i]) ++i;
  std::string key = i < reference.size() ? reference[i].key : fields[i].key;
  auto show = [&](const std::vector<Header>& in_fields, const Wheel& in) {
    std::vector<std::string> values;
    for (const Header& h : in_fields)
      if (iequals(h.key, key)) values.push_back('"' + h.value + '"');
    return fmt::format("{} in {}", values.empty() ? "no " + key : fmt::format("{}", fmt::join(values, ", ")),
                       in.display);
  };
  return {ProblemKind::conflict,
          first.display + ", " + other.display,
          "METADATA",
          fmt::format("METADATA field {} differs between builds", key),
          show(reference, first),
          show(fields, other)};
}

// The conflict, if any, of a build's own requirement `r` that depends on an extra, which
// `extras_named` has read: `unsupported` comparisons, or a marker that holds without an extra.
void check_split_requirement(const Wheel& w, const Requirement& r, bool unsupported, Problems& problems) {
  if (unsupported)
    problems.push_back({ProblemKind::conflict, w.display, w.dist_info + "/METADATA",
                        "a requirement that depends on an extra differs between builds, and compares the extra other "
                        "than as extra == \"NAME\"",
                        "the same requirement in every build, or extra == \"NAME\" comparisons", r.to_string()});
  else if (!requires_extra(*r.marker))
    // Its build installs it with no extra too, which no per-build extra can express.
    problems.push_back({ProblemKind::conflict, w.display, w.dist_info + "/METADATA",
                        "a requirement that differs between builds holds both with and without an extra",
                        "the same requirement in every build, or a marker that holds only with its extra",
                        r.to_string()});
}

// A common requirement `r` whose marker names a split extra X, made to hold under each build's
// X-LABEL too; `changed` when it names one.
Requirement widened(const Requirement& r, const std::vector<const Wheel*>& wheels,
                    const std::vector<std::string>& split, bool& changed) {
  bool unsupported = false;
  Requirement out = r;
  out.marker = map_extras(
      r.marker,
      [&](const std::string& x) -> MarkerPtr {
        if (std::find(split.begin(), split.end(), x) == split.end()) return nullptr;
        changed = true;
        MarkerPtr any = marker_compare("extra", "==", x);
        for (const Wheel* w : wheels)
          any = marker_or(any, marker_compare("extra", "==", per_build_extra(x, w->build_label())));
        return any;
      },
      unsupported);
  return out;
}

// A build's own requirement as the merged METADATA has it: one on an extra X moved to the
// build's X-LABEL, any other made conditional on the label's extra (`on_label` set).
std::string conditional_requirement(const Requirement& r, const VariantLabel& label, bool& on_label) {
  if (depends_on_extra(r)) {
    bool unsupported = false;
    Requirement own = r;
    own.marker = map_extras(
        r.marker, [&](const std::string& x) { return marker_compare("extra", "==", per_build_extra(x, label)); },
        unsupported);
    return own.to_string();
  }
  on_label = true;
  return require_for_extra(r, label.str()).to_string();
}

}  // namespace

namespace metadata_passes {

void check_fixed_fields(const std::vector<const Wheel*>& wheels, bool renamed, Problems& problems) {
  const Wheel& first = *wheels.front();
  auto fixed_fields = [&](const Wheel& w) {
    std::vector<Header> out;
    for (const Header& h : w.metadata.fields)
      if (!varies_per_build(h.key, renamed)) out.push_back(h);
    return out;
  };
  const std::vector<Header> reference = fixed_fields(first);
  for (const Wheel* w : wheels) {
    if (w == &first) continue;
    std::vector<Header> other = fixed_fields(*w);
    if (other != reference) problems.push_back(fixed_field_conflict(first, reference, *w, other));
    if (w->metadata.body != first.metadata.body && !renamed)
      problems.push_back({ProblemKind::conflict, first.display + ", " + w->display, "METADATA",
                          "METADATA description differs between builds", "the same text", "different text"});
  }
}

Shares share_requirements(const std::vector<const Wheel*>& wheels, bool torch) {
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
  Shares shares(wheels.size());
  for (size_t i = 0; i < wheels.size(); ++i) {
    for (size_t k = 0; k < keys[i].size(); ++k) {
      if (torch && is_torch_requirement(wheels[i]->requires_dist[k]))
        shares[i].push_back(Share::torch);
      else
        shares[i].push_back(builds_with.at(keys[i][k]) == wheels.size() ? Share::common : Share::own);
    }
  }
  return shares;
}

std::vector<std::string> split_extras(const std::vector<const Wheel*>& wheels, const Shares& shares,
                                      Problems& problems) {
  std::vector<std::string> split;
  for (size_t i = 0; i < wheels.size(); ++i) {
    const Wheel* w = wheels[i];
    for (size_t k = 0; k < w->requires_dist.size(); ++k) {
      const Requirement& r = w->requires_dist[k];
      if (shares[i][k] != Share::own || !depends_on_extra(r)) continue;
      bool unsupported = false;
      bool invalid_name = false;
      for (const std::string& x : extras_named(r.marker, unsupported)) {
        if (!is_valid_extra_name(x)) {
          // A marker string may hold anything (packaging reads its escapes), but a per-build
          // extra named after it would be no extra name, or break METADATA's lines.
          if (!invalid_name)
            problems.push_back({ProblemKind::conflict, w->display, w->dist_info + "/METADATA",
                                "a requirement that differs between builds depends on an extra whose name is no valid "
                                "extra name, so no per-build extra can be named after it",
                                "extra == \"NAME\" with NAME of letters, digits and . _ - (PEP 685)", r.to_string()});
          invalid_name = true;
        } else if (std::find(split.begin(), split.end(), x) == split.end()) {
          split.push_back(x);
        }
      }
      if (!invalid_name) check_split_requirement(*w, r, unsupported, problems);
    }
  }
  return split;
}

std::vector<std::string> name_build_extras(const std::vector<const Wheel*>& wheels,
                                           const std::vector<std::string>& split, Problems& problems) {
  std::unordered_set<std::string> taken;
  for (const std::string& e : wheels.front()->metadata.all("Provides-Extra")) taken.insert(normalize_extra(e));
  std::vector<std::string> out;
  for (const std::string& x : split) {
    for (const Wheel* w : wheels) {
      std::string name_for_build = per_build_extra(x, w->build_label());
      if (!taken.insert(name_for_build).second) {
        problems.push_back(
            {ProblemKind::conflict, w->display, w->dist_info + "/METADATA",
             fmt::format("the requirements of extra {} differ between builds, but the per-build extra's name is taken",
                         x),
             fmt::format("no extra named {}", name_for_build), "Provides-Extra: " + name_for_build});
        continue;
      }
      out.push_back(name_for_build);
    }
  }
  return out;
}

std::vector<std::string> common_requirements(const std::vector<const Wheel*>& wheels, const Shares& shares,
                                             const std::vector<std::string>& split,
                                             const std::optional<Requirement>& torch) {
  const Wheel& first = *wheels.front();
  std::vector<std::string> out;
  const std::vector<std::string> first_texts = first.metadata.all("Requires-Dist");  // as written
  bool torch_placed = !torch;
  for (size_t k = 0; k < shares.front().size(); ++k) {
    const Requirement& r = first.requires_dist[k];
    if (shares.front()[k] == Share::torch) {
      if (!torch_placed) out.push_back(torch->to_string());
      torch_placed = true;
    } else if (shares.front()[k] == Share::common) {
      bool changed = false;
      Requirement wide = depends_on_extra(r) ? widened(r, wheels, split, changed) : r;
      out.push_back(changed ? wide.to_string() : first_texts[k]);
    }
  }
  if (!torch_placed) out.push_back(torch->to_string());
  return out;
}

std::vector<VariantLabel> add_own_requirements(const std::vector<const Wheel*>& wheels, const Shares& shares,
                                               RequirementBlock& block, Problems& problems) {
  std::unordered_set<std::string> declared;
  for (const std::string& e : block.extras) declared.insert(normalize_extra(e));
  std::vector<VariantLabel> label_extras;
  for (size_t i = 0; i < wheels.size(); ++i) {
    const Wheel* w = wheels[i];
    bool any = false;
    for (size_t k = 0; k < w->requires_dist.size(); ++k) {
      if (shares[i][k] != Share::own) continue;
      std::string conditional = conditional_requirement(w->requires_dist[k], w->build_label(), any);
      if (conditional.size() > kMaxRequirementBytes) {
        problems.push_back({ProblemKind::conflict, w->display, w->dist_info + "/METADATA",
                            "a requirement made conditional on its build's extra would pass the length limit",
                            fmt::format("at most {} bytes", kMaxRequirementBytes),
                            fmt::format("{} bytes", conditional.size())});
        continue;
      }
      block.requirements.push_back(std::move(conditional));
    }
    if (any) {
      label_extras.push_back(w->build_label());
      if (declared.insert(normalize_extra(w->build_label().str())).second)
        block.extras.push_back(w->build_label().str());
    }
  }
  return label_extras;
}

std::optional<std::string> render_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                           const std::string& name, const RequirementBlock& block, Problems& problems) {
  const Wheel& first = *wheels.front();
  const bool renamed = !name.empty();
  // The first build's fields in order; the extras and requirements as one block where they
  // first appeared (or at the end).
  Headers out;
  bool block_done = false;
  auto emit_block = [&] {
    for (const std::string& e : block.extras) out.fields.push_back({"Provides-Extra", e});
    for (const std::string& r : block.requirements) out.fields.push_back({"Requires-Dist", r});
    block_done = true;
  };
  for (const Header& h : first.metadata.fields) {
    bool in_block = iequals(h.key, "Requires-Dist") || iequals(h.key, "Provides-Extra");
    if (in_block) {
      if (!block_done) emit_block();
      continue;
    }
    if (iequals(h.key, "Version"))
      out.fields.push_back({h.key, version});
    else if (renamed && iequals(h.key, "Name"))
      out.fields.push_back({h.key, name});
    else if (renamed && iequals(h.key, "Description"))
      continue;  // merged below, in the first build's form
    else
      out.fields.push_back(h);
  }
  if (!block_done) emit_block();
  out.body = first.metadata.body;
  if (renamed) {
    std::string description = merged_description(wheels);
    if (!first.metadata.body.empty() || !first.metadata.one("Description"))
      out.body = std::move(description);
    else if (!description.empty())
      out.fields.push_back({"Description", folded_description(description)});
  }
  std::string text = out.to_string();
  if (text.size() > kMaxMetadataFile) {
    problems.push_back({ProblemKind::conflict, first.display, first.dist_info + "/METADATA",
                        "the merged METADATA would pass the size limit",
                        fmt::format("at most {} bytes", kMaxMetadataFile), fmt::format("{} bytes", text.size())});
    return std::nullopt;
  }
  return text;
}

void note_loader_needs(const std::vector<const Wheel*>& wheels, MergedMetadata& result) {
  // Whether some build uses cuda-bindings (cuda-python stands for it), and per build the
  // per-build extras that bring its CUDA runtime (`ctk-cu12` holding `cuda-toolkit[cudart]==12.*`
  // or nvidia-cuda-runtime).
  for (const Wheel* w : wheels) {
    for (const Requirement& r : w->requires_dist) {
      const std::string name = normalize_name(r.name);  // "cuda_bindings"
      if (name == "cuda_bindings" || name == "cuda_python") result.cuda_bindings = true;
      if (name != "cuda_toolkit" && !name.starts_with("nvidia_cuda_runtime")) continue;
      bool unsupported = false;
      for (const std::string& x : extras_named(r.marker, unsupported)) {
        std::string extra = per_build_extra(x, w->build_label());
        auto& list = result.runtime_extras[w->build_label()];
        if (std::find(result.build_extras.begin(), result.build_extras.end(), extra) != result.build_extras.end() &&
            std::find(list.begin(), list.end(), extra) == list.end())
          list.push_back(extra);
      }
    }
  }
}

}  // namespace metadata_passes

std::optional<MergedMetadata> merge_metadata(const std::vector<const Wheel*>& wheels, const std::string& version,
                                             const std::string& name, Problems& problems) {
  using namespace metadata_passes;
  const size_t before = problems.size();
  auto failed = [&] { return problems.size() != before; };
  check_fixed_fields(wheels, !name.empty(), problems);
  if (failed()) return std::nullopt;
  // torch builds: every build's torch requirement gives way to one covering them all.
  const std::optional<Requirement> torch = combined_torch_requirement(wheels, problems);
  if (failed()) return std::nullopt;
  // Requirements every build shares stay as they are; the others become per-label extras, and
  // those on an extra, per-build extras of it.
  const Shares shares = share_requirements(wheels, torch.has_value());
  const std::vector<std::string> split = split_extras(wheels, shares, problems);
  if (failed()) return std::nullopt;
  MergedMetadata result;
  result.build_extras = name_build_extras(wheels, split, problems);
  if (failed()) return std::nullopt;
  RequirementBlock block{wheels.front()->metadata.all("Provides-Extra"),
                         common_requirements(wheels, shares, split, torch)};
  block.extras.insert(block.extras.end(), result.build_extras.begin(), result.build_extras.end());
  result.label_extras = add_own_requirements(wheels, shares, block, problems);
  if (failed()) return std::nullopt;
  std::optional<std::string> text = render_metadata(wheels, version, name, block, problems);
  if (!text) return std::nullopt;
  result.text = std::move(*text);
  note_loader_needs(wheels, result);
  return result;
}

}  // namespace wm
