#include "merger/problem.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("problems describe file, member, expected and found") {
  Problem p{ProblemKind::invalid_input, "a.whl", "pkg/x.py", "hash does not match RECORD", "sha256=A", "sha256=B"};
  CHECK(describe(p) == "a.whl: pkg/x.py: hash does not match RECORD: expected sha256=A, found sha256=B");
  p.member.clear();
  p.expected.clear();
  CHECK(describe(p) == "a.whl: hash does not match RECORD: found sha256=B");
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
  CHECK(describe(p) == "a.whl: pkg/big.so: interrupted: found signal 15");
  // No signal caught in this process: the exit status of SIGINT's default.
  CHECK(exit_code({p}) == 130);
}
