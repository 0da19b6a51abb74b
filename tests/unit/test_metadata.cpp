#include "merger/metadata.hpp"

#include <doctest/doctest.h>

using namespace wm;

namespace {
Wheel build(const std::string& label, const std::vector<std::string>& requirements) {
  Wheel w;
  w.label = label;
  w.display = "pkg-1.0-cp311-cp311-linux_x86_64." + label + ".whl";
  w.dist_info = "pkg-1.0.dist-info";
  w.metadata.fields = {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}};
  for (const std::string& text : requirements) {
    w.metadata.fields.push_back({"Requires-Dist", text});
    std::string error;
    auto r = parse_requirement(text, error);
    REQUIRE_MESSAGE(r, error);
    w.requires_dist.push_back(*r);
  }
  return w;
}
}  // namespace

TEST_CASE("differing requirements become extras named after the label, combined as marker trees") {
  Wheel a = build("cu12", {"numpy>=1.24", "cuda-bindings>=12,<13", "x; python_version < \"3.12\" or os_name == \"nt\""});
  Wheel b = build("cu13", {"numpy >= 1.24", "cuda-bindings>=13,<14"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE_MESSAGE(merged, (problems.empty() ? "" : problems[0].what));
  const std::string& text = merged->text;
  CHECK(text.find("Requires-Dist: numpy>=1.24\n") != std::string::npos);  // shared (spacing aside): kept as written
  CHECK(text.find("Requires-Dist: cuda-bindings>=12,<13; extra == \"cu12\"\n") != std::string::npos);
  // "or" under the added "and" keeps its parentheses.
  CHECK(text.find("Requires-Dist: x; (python_version < \"3.12\" or os_name == \"nt\") and extra == \"cu12\"\n") !=
        std::string::npos);
  CHECK(text.find("Provides-Extra: cu12\n") != std::string::npos);
  CHECK(text.find("Provides-Extra: cu13\n") != std::string::npos);
  CHECK(merged->label_extras == std::vector<std::string>{"cu12", "cu13"});
}

TEST_CASE("identical requirements give no extras") {
  Wheel a = build("cu12", {"numpy"});
  Wheel b = build("cu13", {"numpy"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  CHECK(merged->label_extras.empty());
  CHECK(merged->text.find("Provides-Extra") == std::string::npos);
}

TEST_CASE("a differing requirement that already depends on an extra is a conflict") {
  Wheel a = build("cu12", {"scipy; extra == \"full\""});
  Wheel b = build("cu13", {"scipy>=1; extra == \"full\""});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].member == "pkg-1.0.dist-info/METADATA");
}

TEST_CASE("many requirements merge in linear time") {
  std::vector<std::string> many, others;
  for (int i = 0; i < 100000; ++i) many.push_back("p" + std::to_string(i));
  for (int i = 0; i < 100000; ++i) others.push_back("p" + std::to_string(i) + ">=1");
  Wheel a = build("cu12", many);
  Wheel b = build("cu13", others);
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  CHECK(merged->text.find("Requires-Dist: p99999>=1; extra == \"cu13\"") != std::string::npos);
}
