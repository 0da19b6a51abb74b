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
