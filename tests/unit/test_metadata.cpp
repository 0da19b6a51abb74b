#include "merger/metadata.hpp"

#include <doctest/doctest.h>

#include <algorithm>

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

namespace {
// A build whose METADATA holds `fields` (Requires-Dist lines among them, parsed as the reader
// would) and `body` as its description.
Wheel build_with(const std::string& label, const std::vector<Header>& fields, const std::string& body = {}) {
  Wheel w;
  w.label = label;
  w.display = "pkg-1.0-cp311-cp311-linux_x86_64." + label + ".whl";
  w.dist_info = "pkg-1.0.dist-info";
  w.metadata.fields = fields;
  w.metadata.body = body;
  for (const Header& h : fields) {
    if (h.key != "Requires-Dist") continue;
    std::string error;
    auto r = parse_requirement(h.value, error);
    REQUIRE_MESSAGE(r, error);
    w.requires_dist.push_back(*r);
  }
  return w;
}

std::vector<Header> fields_of(const std::string& text) {
  Problems problems;
  auto headers = parse_headers(text, "merged", "METADATA", problems);
  REQUIRE(headers);
  return headers->fields;
}
}  // namespace

TEST_CASE("metadata: a requirement per build becomes a requirement on the build's extra") {
  Wheel a = build("cu12", {"numpy", "cuda-bindings~=12.0"});
  Wheel b = build("cu13", {"numpy", "cuda-bindings~=13.0"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  CHECK(problems.empty());
  CHECK(merged->label_extras == std::vector<std::string>{"cu12", "cu13"});
  CHECK(fields_of(merged->text) == std::vector<Header>{{"Metadata-Version", "2.1"},
                                                       {"Name", "pkg"},
                                                       {"Version", "1.0"},
                                                       {"Provides-Extra", "cu12"},
                                                       {"Provides-Extra", "cu13"},
                                                       {"Requires-Dist", "numpy"},
                                                       {"Requires-Dist", "cuda-bindings~=12.0; extra == \"cu12\""},
                                                       {"Requires-Dist", "cuda-bindings~=13.0; extra == \"cu13\""}});
}

TEST_CASE("metadata: only builds with a requirement of their own get an extra") {
  Wheel a = build("cu12", {"numpy", "nvidia-cuda-runtime-cu12"});
  Wheel b = build("cu13", {"numpy"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  CHECK(merged->label_extras == std::vector<std::string>{"cu12"});
  CHECK(merged->text.find("Provides-Extra: cu12\n") != std::string::npos);
  CHECK(merged->text.find("Provides-Extra: cu13") == std::string::npos);
  CHECK(merged->text.find("Requires-Dist: nvidia-cuda-runtime-cu12; extra == \"cu12\"\n") != std::string::npos);
}

TEST_CASE("metadata: a requirement two of three builds share is made conditional for each of them") {
  Wheel a = build("cu11", {"x>=1"});
  Wheel b = build("cu12", {"x>=1"});
  Wheel c = build("cu13", {"x>=2"});
  Problems problems;
  auto merged = merge_metadata({&a, &b, &c}, "1.0", problems);
  REQUIRE(merged);
  CHECK(merged->label_extras == std::vector<std::string>{"cu11", "cu12", "cu13"});
  for (const char* line : {"Requires-Dist: x>=1; extra == \"cu11\"\n", "Requires-Dist: x>=1; extra == \"cu12\"\n",
                           "Requires-Dist: x>=2; extra == \"cu13\"\n"}) {
    CAPTURE(line);
    CHECK(merged->text.find(line) != std::string::npos);
  }
}

TEST_CASE("metadata: requirements the same for pip are shared whatever their spelling") {
  Wheel a = build("cu12", {"a>=1,<2", "b[y,x]", "Some_Name>=1", "c; python_version >= \"3.10\""});
  Wheel b = build("cu13", {"a<2,>=1", "b[x,y]", "some-name>=1", "c ; python_version>=\"3.10\""});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  CHECK(merged->label_extras.empty());
  // Kept as the first build wrote them.
  CHECK(merged->text.find("Requires-Dist: a>=1,<2\n") != std::string::npos);
  CHECK(merged->text.find("Requires-Dist: b[y,x]\n") != std::string::npos);
  CHECK(merged->text.find("Requires-Dist: Some_Name>=1\n") != std::string::npos);
}

TEST_CASE("metadata: a shared requirement on an extra stays as it is") {
  Wheel a = build("cu12", {"scipy; extra == \"full\"", "cupy-cuda12x"});
  Wheel b = build("cu13", {"scipy; extra == \"full\"", "cupy-cuda13x"});
  a.metadata.fields.insert(a.metadata.fields.begin() + 3, {"Provides-Extra", "full"});
  b.metadata.fields.insert(b.metadata.fields.begin() + 3, {"Provides-Extra", "full"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE_MESSAGE(merged, (problems.empty() ? "" : describe(problems[0])));
  CHECK(merged->label_extras == std::vector<std::string>{"cu12", "cu13"});
  std::vector<Header> fields = fields_of(merged->text);
  CHECK(std::vector<Header>(fields.begin() + 3, fields.begin() + 6) ==
        std::vector<Header>{{"Provides-Extra", "full"}, {"Provides-Extra", "cu12"}, {"Provides-Extra", "cu13"}});
  CHECK(merged->text.find("Requires-Dist: scipy; extra == \"full\"\n") != std::string::npos);
}

TEST_CASE("metadata: an extra of the label's name that already exists is not declared twice") {
  Wheel a = build("cu12", {"cupy-cuda12x"});
  Wheel b = build("cu13", {"cupy-cuda13x"});
  for (Wheel* w : {&a, &b}) w->metadata.fields.push_back({"Provides-Extra", "cu12"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  std::vector<Header> fields = fields_of(merged->text);
  CHECK(std::count(fields.begin(), fields.end(), Header{"Provides-Extra", "cu12"}) == 1);
  CHECK(std::count(fields.begin(), fields.end(), Header{"Provides-Extra", "cu13"}) == 1);
}

TEST_CASE("metadata: the version is the merged one, and fields keep their order and the description") {
  Wheel a = build_with("cu12", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0+cu12"},
                                {"Summary", "s"}, {"Requires-Dist", "numpy"}, {"License", "MIT"}},
                       "Long description.\n");
  Wheel b = build_with("cu13", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0+cu13"},
                                {"Summary", "s"}, {"Requires-Dist", "numpy"}, {"License", "MIT"}},
                       "Long description.\n");
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE_MESSAGE(merged, (problems.empty() ? "" : describe(problems[0])));
  CHECK(fields_of(merged->text) == std::vector<Header>{{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"},
                                                       {"Summary", "s"}, {"Requires-Dist", "numpy"}, {"License", "MIT"}});
  CHECK(merged->text.ends_with("\n\nLong description.\n"));
}

TEST_CASE("metadata: a single-use field that differs between builds is a conflict") {
  Wheel a = build_with("cu12", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}, {"Summary", "for CUDA 12"}});
  Wheel b = build_with("cu13", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}, {"Summary", "for CUDA 13"}});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].what == "METADATA field Summary differs between builds");
  CHECK(problems[0].file == a.display + ", " + b.display);
  CHECK(problems[0].expected == "\"for CUDA 12\" in " + a.display);
  CHECK(problems[0].found == "\"for CUDA 13\" in " + b.display);
}

TEST_CASE("metadata: a field only one build has is a conflict naming it") {
  Wheel a = build_with("cu12", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}});
  Wheel b = build_with("cu13", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}, {"Requires-Python", ">=3.10"}});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "METADATA field Requires-Python differs between builds");
  CHECK(problems[0].expected == "no Requires-Python in " + a.display);
}

TEST_CASE("metadata: a multi-use field in another order is a conflict") {
  Wheel a = build_with("cu12", {{"Name", "pkg"}, {"Classifier", "A"}, {"Classifier", "B"}});
  Wheel b = build_with("cu13", {{"Name", "pkg"}, {"Classifier", "B"}, {"Classifier", "A"}});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "METADATA field Classifier differs between builds");
}

TEST_CASE("metadata: a description that differs between builds is a conflict") {
  Wheel a = build_with("cu12", {{"Name", "pkg"}, {"Version", "1.0"}}, "Built for CUDA 12.\n");
  Wheel b = build_with("cu13", {{"Name", "pkg"}, {"Version", "1.0"}}, "Built for CUDA 13.\n");
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].what == "METADATA description differs between builds");
}
