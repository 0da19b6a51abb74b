#include "problem.hpp"

namespace wm {

std::string describe(const Problem& p) {
  std::string out;
  auto add = [&](const std::string& part) {
    if (part.empty()) return;
    if (!out.empty()) out += ": ";
    out += part;
  };
  add(p.file);
  add(p.member);
  add(p.what);
  if (!p.expected.empty() || !p.found.empty()) {
    std::string detail;
    if (!p.expected.empty()) detail += "expected " + p.expected;
    if (!p.found.empty()) detail += (detail.empty() ? "found " : ", found ") + p.found;
    out += out.empty() ? detail : ": " + detail;
  }
  return out;
}

const char* kind_name(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::usage: return "usage";
    case ProblemKind::invalid_input: return "invalid-input";
    case ProblemKind::conflict: return "conflict";
    case ProblemKind::other: break;
  }
  return "error";
}

int exit_code(const Problems& problems) {
  if (problems.empty()) return 0;
  switch (problems.front().kind) {
    case ProblemKind::usage: return 2;
    case ProblemKind::invalid_input: return 3;
    case ProblemKind::conflict: return 4;
    case ProblemKind::other: break;
  }
  return 1;
}

}  // namespace wm
