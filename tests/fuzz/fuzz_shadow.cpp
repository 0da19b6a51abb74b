// verify's shadow check (check_loaders) over arbitrary member lists. The input's first line is
// the directory of a loader member (DIR/_wheelmerge.py, "pkg" or "x.data/platlib/pkg"), every
// further line another member. Property: for the loader and for its rules module, verify reports
// one "a file Python could import" problem for each kind of shadow the members hold, and none
// where they hold none, against an oracle that looks at every member: where the member lands in
// site-packages (the root, or .data's purelib and platlib; nowhere else), and whether that is
// the package directory of the module's name, another file of the name (any suffix), or
// bytecode of the name in __pycache__, other than the module itself.
#include "fuzz_common.hpp"
#include "merger/verify.hpp"

#include <array>
#include <map>
#include <optional>
#include <set>

namespace {
// Where a member lands in site-packages, from the wheel format's rule, or nullopt.
std::optional<std::string> installed_at(const std::string& member) {
  const size_t slash = member.find('/');
  const std::string top = member.substr(0, slash);
  if (slash == std::string::npos || top.size() < 5 || top.compare(top.size() - 5, 5, ".data") != 0) return member;
  for (const std::string key : {"purelib/", "platlib/"})
    if (member.compare(slash + 1, key.size(), key) == 0) return member.substr(slash + 1 + key.size());
  return std::nullopt;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = wm_fuzz::as_text(data, size);
  std::vector<std::string> lines;
  for (size_t at = 0; at <= text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  const std::string loader = lines.front() + "/_wheelmerge.py";
  std::set<std::string> members(lines.begin() + 1, lines.end());
  members.insert(loader);
  members.erase("");

  wm::Problems problems;
  wm::check_loaders("in.whl", {wm::LoaderFiles{loader, "", "", std::nullopt}}, members, problems);
  std::map<std::string, size_t> reported;  // "a file Python could import as NAME" -> count
  for (const wm::Problem& p : problems)
    if (p.what.starts_with("a file Python could import as ")) {
      ++reported[p.what];
      FUZZ_CHECK(members.count(p.member), "a shadow named that is no member: " + p.member);
    }

  std::map<std::string, size_t> expected;
  const auto own = installed_at(loader);
  if (own) {
    const std::string dir = own->substr(0, own->rfind('/') + 1);
    for (const std::string stem : {"_wheelmerge", "_wheelmerge_rules"}) {
      const std::array<std::string, 3> prefixes = {dir + stem + "/", dir + stem + ".",
                                                   dir + "__pycache__/" + stem + "."};
      for (const std::string& prefix : prefixes) {
        bool any = false;
        for (const std::string& m : members) {
          const auto at = installed_at(m);
          if (at && *at != dir + stem + ".py" && at->starts_with(prefix)) any = true;
        }
        if (any) ++expected["a file Python could import as " + stem];
      }
    }
  }
  FUZZ_CHECK(reported == expected, "shadows reported: " + std::to_string(reported.size()) +
                                       " names; the oracle's: " + std::to_string(expected.size()));
  return 0;
}
