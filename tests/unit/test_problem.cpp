#include "merger/base/problem.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("problems describe file, member, expected and found") {
  Problem p{ProblemKind::invalid_input, "a.whl", "pkg/x.py", "hash does not match RECORD", "sha256=A", "sha256=B"};
  CHECK(describe(p) == "a.whl: pkg/x.py: hash does not match RECORD: expected sha256=A, found sha256=B");
  p.member.clear();
  p.expected.clear();
  CHECK(describe(p) == "a.whl: hash does not match RECORD: sha256=B");  // a reason, not a finding
}

TEST_CASE("exit codes follow the first problem's kind") {
  CHECK(exit_code({}) == 0);
  CHECK(exit_code({{ProblemKind::usage, {}, {}, "x", {}, {}}}) == 2);
  CHECK(exit_code({{ProblemKind::invalid_input, {}, {}, "x", {}, {}}}) == 3);
  CHECK(exit_code({{ProblemKind::conflict, {}, {}, "x", {}, {}}}) == 4);
  CHECK(exit_code({{ProblemKind::other, {}, {}, "x", {}, {}}}) == 1);
}

TEST_CASE("an interruption is its own kind, named for the signal") {
  Problem p = interruption("a.whl", "pkg/big.so", 15);
  CHECK(p.kind == ProblemKind::interrupted);
  CHECK(std::string(kind_name(p.kind)) == "interrupted");
  CHECK(describe(p) == "a.whl: pkg/big.so: interrupted: signal 15");
  // No signal caught in this process: the exit status of SIGINT's default.
  CHECK(exit_code({p}) == 130);
}

TEST_CASE("an input's line breaks are escaped everywhere; a log's lines stay lines, indented") {
  // A RECORD path holding a newline cannot print a line of its own (a forged verdict).
  const std::string forged = "pkg/a.py\nwheelmerge: b.whl: valid wheel";
  Problem p{ProblemKind::invalid_input, "a.whl", forged, "file not in RECORD", forged, forged};
  const std::string text = describe(p);
  CHECK(text.find('\n') == std::string::npos);
  CHECK(text ==
        "a.whl: pkg/a.py\\nwheelmerge: b.whl: valid wheel: file not in RECORD: expected pkg/a.py\\nwheelmerge: "
        "b.whl: valid wheel, found pkg/a.py\\nwheelmerge: b.whl: valid wheel");
  Problem log{ProblemKind::other, "cu12", {}, "the build failed", {}, "$ make\n  last lines:\nerror: x\n", true};
  CHECK(describe(log) == "cu12: the build failed: $ make\n      last lines:\n    error: x\n    ");
}
