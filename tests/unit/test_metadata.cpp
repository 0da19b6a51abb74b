#include "merger/metadata.hpp"

#include "labels.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

using namespace wm;
using namespace wm::test_labels;

namespace {
Wheel build(const std::string& label, const std::vector<std::string>& requirements) {
  Wheel w;
  w.label = VariantLabel::parse(label);
  REQUIRE(w.label);
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
  Wheel a =
      build("cu12", {"numpy>=1.24", "cuda-bindings>=12,<13", "x; python_version < \"3.12\" or os_name == \"nt\""});
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
  CHECK(label_strings(merged->label_extras) == std::vector<std::string>{"cu12", "cu13"});
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

TEST_CASE("a differing requirement that compares an extra other than with == is a conflict") {
  Wheel a = build("cu12", {"scipy; extra != \"full\""});
  Wheel b = build("cu13", {"scipy>=1; extra != \"full\""});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].member == "pkg-1.0.dist-info/METADATA");
  CHECK(problems[0].what.find("compares the extra other than as extra == \"NAME\"") != std::string::npos);
}

TEST_CASE("a differing requirement under an extra that is no valid extra name is a conflict") {
  // packaging reads Python escapes in marker strings: '\n' and '\0' make a newline and a NUL,
  // which a per-build extra named after them would carry into METADATA.
  for (const char* extra : {"a\\nb", "a\\0b", "-x", "a b", "x."}) {
    Wheel a = build("cu12", {fmt::format("scipy; extra == '{}'", extra)});
    Wheel b = build("cu13", {fmt::format("scipy>=1; extra == '{}'", extra)});
    Problems problems;
    CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
    REQUIRE(problems.size() >= 1);
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK(problems[0].what.find("no valid extra name") != std::string::npos);
  }
  Wheel a = build("cu12", {"scipy; extra == 'Full.GPU_x'"});
  Wheel b = build("cu13", {"scipy>=1; extra == 'Full.GPU_x'"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE(merged);
  CHECK(merged->text.find("Provides-Extra: full-gpu-x-cu12\n") != std::string::npos);
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
  w.label = VariantLabel::parse(label);
  REQUIRE(w.label);
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
  CHECK(label_strings(merged->label_extras) == std::vector<std::string>{"cu12", "cu13"});
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
  CHECK(label_strings(merged->label_extras) == std::vector<std::string>{"cu12"});
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
  CHECK(label_strings(merged->label_extras) == std::vector<std::string>{"cu11", "cu12", "cu13"});
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
  CHECK(label_strings(merged->label_extras) == std::vector<std::string>{"cu12", "cu13"});
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
  Wheel a = build_with("cu12",
                       {{"Metadata-Version", "2.1"},
                        {"Name", "pkg"},
                        {"Version", "1.0+cu12"},
                        {"Summary", "s"},
                        {"Requires-Dist", "numpy"},
                        {"License", "MIT"}},
                       "Long description.\n");
  Wheel b = build_with("cu13",
                       {{"Metadata-Version", "2.1"},
                        {"Name", "pkg"},
                        {"Version", "1.0+cu13"},
                        {"Summary", "s"},
                        {"Requires-Dist", "numpy"},
                        {"License", "MIT"}},
                       "Long description.\n");
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  REQUIRE_MESSAGE(merged, (problems.empty() ? "" : describe(problems[0])));
  CHECK(fields_of(merged->text) == std::vector<Header>{{"Metadata-Version", "2.1"},
                                                       {"Name", "pkg"},
                                                       {"Version", "1.0"},
                                                       {"Summary", "s"},
                                                       {"Requires-Dist", "numpy"},
                                                       {"License", "MIT"}});
  CHECK(merged->text.ends_with("\n\nLong description.\n"));
}

TEST_CASE("metadata: a single-use field that differs between builds is a conflict") {
  Wheel a = build_with("cu12",
                       {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}, {"Summary", "for CUDA 12"}});
  Wheel b = build_with("cu13",
                       {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}, {"Summary", "for CUDA 13"}});
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
  Wheel b = build_with(
      "cu13", {{"Metadata-Version", "2.1"}, {"Name", "pkg"}, {"Version", "1.0"}, {"Requires-Python", ">=3.10"}});
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

namespace {
const std::string* text_of(const std::optional<MergedMetadata>& merged, const Problems& problems) {
  REQUIRE_MESSAGE(merged, (problems.empty() ? "" : describe(problems[0])));
  return &merged->text;
}
bool has_line(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }
}  // namespace

TEST_CASE("metadata: a requirement of an extra that differs per build becomes one extra per build") {
  // CuPy's cupy-cuda12x and cupy-cuda13x: `pip install "cupy[ctk-cu12]"` must pull that build's toolkit.
  Wheel a = build("cu12", {"numpy", "cuda-toolkit[cudart,nvrtc]==12.*; extra == \"ctk\"", "mpmath; extra == \"ctk\""});
  Wheel b = build("cu13", {"numpy", "cuda-toolkit[cudart,nvrtc]==13.*; extra == \"ctk\"", "mpmath; extra == \"ctk\""});
  for (Wheel* w : {&a, &b}) w->metadata.fields.insert(w->metadata.fields.begin() + 3, {"Provides-Extra", "ctk"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  const std::string& text = *text_of(merged, problems);
  CHECK(merged->build_extras == std::vector<std::string>{"ctk-cu12", "ctk-cu13"});
  CHECK(merged->label_extras.empty());
  for (const char* line :
       {"Provides-Extra: ctk", "Provides-Extra: ctk-cu12", "Provides-Extra: ctk-cu13",
        "Requires-Dist: cuda-toolkit[cudart,nvrtc]==12.*; extra == \"ctk-cu12\"",
        "Requires-Dist: cuda-toolkit[cudart,nvrtc]==13.*; extra == \"ctk-cu13\"",
        // the shared part of the extra holds under every spelling
        "Requires-Dist: mpmath; extra == \"ctk\" or extra == \"ctk-cu12\" or extra == \"ctk-cu13\""}) {
    CAPTURE(line);
    CHECK(has_line(text, line));
  }
  CHECK(text.find("extra == \"cu12\"") == std::string::npos);
}

TEST_CASE("metadata: per-build extras keep the rest of the marker and normalize the extra's name") {
  Wheel a = build("cu12", {"x==1; extra == \"Full_GPU\" and python_version >= \"3.10\""});
  Wheel b = build("cu13", {"x==2; python_version >= \"3.10\" and \"Full_GPU\" == extra"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  const std::string& text = *text_of(merged, problems);
  CHECK(has_line(text, "Requires-Dist: x==1; extra == \"full-gpu-cu12\" and python_version >= \"3.10\""));
  CHECK(has_line(text, "Requires-Dist: x==2; python_version >= \"3.10\" and extra == \"full-gpu-cu13\""));
  CHECK(has_line(text, "Provides-Extra: full-gpu-cu13"));
}

TEST_CASE("metadata: a differing requirement that holds with and without an extra is a conflict") {
  Wheel a = build("cu12", {"foo; python_version >= \"3\" or extra == \"cu13\""});
  Wheel b = build("cu13", {"bar"});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "a requirement that differs between builds holds both with and without an extra");
  // `extra == ""` holds with no extra.
  Wheel d = build("cu12", {"foo; extra == \"\""});
  problems.clear();
  CHECK_FALSE(merge_metadata({&d, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what.find("compares the extra other than as extra == \"NAME\"") != std::string::npos);
  // Needing an extra in every branch is enough.
  Wheel c = build("cu12", {"foo; (extra == \"x\" or extra == \"y\") and os_name == \"posix\""});
  problems.clear();
  auto merged = merge_metadata({&c, &b}, "1.0", problems);
  CHECK(has_line(*text_of(merged, problems),
                 "Requires-Dist: foo; (extra == \"x-cu12\" or extra == \"y-cu12\") and os_name == \"posix\""));
}

TEST_CASE("metadata: a per-build extra whose name the inputs already use is a conflict") {
  Wheel a = build("cu12", {"x==1; extra == \"ctk\""});
  Wheel b = build("cu13", {"x==2; extra == \"ctk\""});
  for (Wheel* w : {&a, &b}) w->metadata.fields.push_back({"Provides-Extra", "ctk_cu13"});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].expected == "no extra named ctk-cu13");
}

TEST_CASE("metadata: --name renames the distribution; the builds' names may differ") {
  Wheel a = build_with(
      "cu12", {{"Metadata-Version", "2.4"}, {"Name", "cupy-cuda12x"}, {"Version", "14.2.0"}, {"Summary", "s"}});
  Wheel b = build_with(
      "cu13", {{"Metadata-Version", "2.4"}, {"Name", "cupy-cuda13x"}, {"Version", "14.2.0"}, {"Summary", "s"}});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "14.2.0", problems));  // without a name, Name must agree
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "METADATA field Name differs between builds");
  problems.clear();
  auto merged = merge_metadata({&a, &b}, "14.2.0", "cupy", problems);
  CHECK(fields_of(*text_of(merged, problems)) ==
        std::vector<Header>{{"Metadata-Version", "2.4"}, {"Name", "cupy"}, {"Version", "14.2.0"}, {"Summary", "s"}});
}

TEST_CASE("metadata: --name merges a Description field as it merges a body") {
  // The older form: the description in a folded field (setuptools' eight spaces, or "       |").
  Wheel a = build_with("cu12", {{"Metadata-Version", "2.1"},
                                {"Name", "cupy-cuda12x"},
                                {"Version", "1.0"},
                                {"Description", "CuPy\n        \n        for CUDA 12\n        \n        MIT"}});
  Wheel b = build_with("cu13", {{"Metadata-Version", "2.1"},
                                {"Name", "cupy-cuda13x"},
                                {"Version", "1.0"},
                                {"Description", "CuPy\n       |\n       |for CUDA 13\n       |\n       |MIT"}});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", "cupy", problems);
  const std::string& text = *text_of(merged, problems);
  Problems parse_problems;
  auto headers = parse_headers(text, "METADATA", "x", parse_problems);
  REQUIRE(headers);
  CHECK(headers->all("Description").size() == 1);
  CHECK(headers->body.empty());
  Wheel out;
  out.metadata = *headers;
  CHECK(description_text(out) ==
        "CuPy\n\nFor the cu12 build (from cupy-cuda12x 1.0):\n\nfor CUDA 12\n\n"
        "For the cu13 build (from cupy-cuda13x 1.0):\n\nfor CUDA 13\n\nMIT");
  // The body form, as before, for a first build that has it; the field form of the other read alike.
  a.metadata.fields.pop_back();
  a.metadata.body = "CuPy\n\nfor CUDA 12\n\nMIT";
  problems.clear();
  auto body = merge_metadata({&a, &b}, "1.0", "cupy", problems);
  const std::string& body_text = *text_of(body, problems);
  CHECK(body_text.find("Description:") == std::string::npos);
  CHECK(
      body_text.ends_with("\n\nCuPy\n\nFor the cu12 build (from cupy-cuda12x 1.0):\n\nfor CUDA 12\n\n"
                          "For the cu13 build (from cupy-cuda13x 1.0):\n\nfor CUDA 13\n\nMIT"));
}

TEST_CASE("metadata: torch builds get one torch requirement covering the builds' minors") {
  Wheel a = build("torch210_cu12", {"numpy", "torch==2.10.*", "cuda-bindings~=12.8"});
  Wheel b = build("torch211_cu13", {"numpy", "torch>=2.11,<2.12", "cuda-bindings~=13.0"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  const std::string& text = *text_of(merged, problems);
  CHECK(fields_of(text) == std::vector<Header>{{"Metadata-Version", "2.1"},
                                               {"Name", "pkg"},
                                               {"Version", "1.0"},
                                               {"Provides-Extra", "torch210_cu12"},
                                               {"Provides-Extra", "torch211_cu13"},
                                               {"Requires-Dist", "numpy"},
                                               {"Requires-Dist", "torch>=2.10,<2.12"},
                                               {"Requires-Dist", "cuda-bindings~=12.8; extra == \"torch210_cu12\""},
                                               {"Requires-Dist", "cuda-bindings~=13.0; extra == \"torch211_cu13\""}});
}

TEST_CASE("metadata: the torch requirement excludes minors without a build and keeps common extras and markers") {
  Wheel a = build("torch29_cu12", {"torch[opt-einsum]>=2.9; sys_platform == \"linux\""});
  Wheel b = build("torch211_cu13", {"torch[opt-einsum]>=2.11; sys_platform == \"linux\""});
  Wheel c = build("torch211_cu12", {"torch[opt-einsum]==2.11.0; sys_platform == \"linux\""});
  Problems problems;
  auto merged = merge_metadata({&a, &c, &b}, "1.0", problems);
  const std::string& text = *text_of(merged, problems);
  CHECK(has_line(text, "Requires-Dist: torch[opt-einsum]>=2.9,<2.12,!=2.10.*; sys_platform == \"linux\""));
  CHECK(text.find("extra ==") == std::string::npos);
}

TEST_CASE("metadata: floor builds get one torch requirement from the lowest floor, within its major") {
  // A stable-ABI extension: one build per CUDA major, each for torch 2.10 or later; a CPU build beside them.
  Wheel a = build("torch210plus_cu12", {"numpy", "torch>=2.10"});
  Wheel b = build("torch211plus_cu13", {"numpy", "torch>=2.11"});
  Wheel c = build("torch210plus_cpu", {"numpy"});
  Problems problems;
  auto merged = merge_metadata({&a, &c, &b}, "1.0", problems);
  const std::string& text = *text_of(merged, problems);
  CHECK(has_line(text, "Requires-Dist: torch>=2.10,<3"));
  CHECK(text.find("torch>=2.11") == std::string::npos);
  // Each build's own requirement must still admit its floor.
  Wheel wrong = build("torch210plus_cu12", {"torch>=2.11"});
  problems.clear();
  CHECK_FALSE(merge_metadata({&wrong, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].expected == "a requirement admitting torch 2.10 (label torch210plus_cu12)");
}

TEST_CASE("metadata: exact and floor torch labels in one merge, or floors of two majors, are refused") {
  Wheel exact = build("torch210_cu12", {});
  Wheel floor = build("torch211plus_cu13", {});
  Problems problems;
  CHECK_FALSE(merge_metadata({&exact, &floor}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::usage);
  CHECK(problems[0].what == "torch labels with a floor and without one in one merge");
  CHECK(problems[0].found == "torch210_cu12, torch211plus_cu13");
  Wheel three = build("torch30plus_cu13", {});
  problems.clear();
  CHECK_FALSE(merge_metadata({&floor, &three}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "torch floors of different majors in one merge");
  CHECK(problems[0].found == "torch211plus_cu13, torch30plus_cu13");
}

TEST_CASE("metadata: torch builds without a torch requirement get the covering one") {
  Wheel a = build("torch210_cu12", {"numpy"});
  Wheel b = build("torch211_cu13", {"numpy"});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  CHECK(has_line(*text_of(merged, problems), "Requires-Dist: torch>=2.10,<2.12"));
}

TEST_CASE("metadata: a torch requirement that excludes the label's torch is refused") {
  Wheel a = build("torch210_cu12", {"torch>=2.11"});
  Wheel b = build("torch211_cu13", {"torch>=2.11"});
  Problems problems;
  CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == a.display);
  CHECK(problems[0].what == "the build's torch requirement excludes the torch its label names");
  CHECK(problems[0].expected == "a requirement admitting torch 2.10 (label torch210_cu12)");
  CHECK(problems[0].found == "torch>=2.11");
}

TEST_CASE("metadata: torch requirements that differ in their markers, or cannot be evaluated, are refused") {
  {
    Wheel a = build("torch210_cu12", {"torch==2.10.*; python_version < \"3.13\""});
    Wheel b = build("torch211_cu13", {"torch==2.11.*"});
    Problems problems;
    CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "torch requirements differ between builds in more than their versions");
  }
  {
    Wheel a = build("torch210_cu12", {"torch>=2.10.0a0"});
    Wheel b = build("torch211_cu13", {"torch>=2.10.0a0"});
    Problems problems;
    CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].what == "cannot evaluate the build's torch requirement");
    CHECK(problems[0].found.find(">=2.10.0a0") != std::string::npos);
  }
  {
    Wheel a = build("torch29_cu12", {"numpy"});
    Wheel b = build("torch30_cu13", {"numpy"});
    Problems problems;
    CHECK_FALSE(merge_metadata({&a, &b}, "1.0", problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "cannot cover the builds' torch versions in one requirement");
  }
}

TEST_CASE("metadata: a torch requirement of an extra is left to the extra rules") {
  Wheel a = build("torch210_cu12", {"torch==2.10.*", "torchvision; extra == \"vision\"", "torch; extra == \"vision\""});
  Wheel b = build("torch211_cu13", {"torch==2.11.*", "torchvision; extra == \"vision\"", "torch; extra == \"vision\""});
  Problems problems;
  auto merged = merge_metadata({&a, &b}, "1.0", problems);
  const std::string& text = *text_of(merged, problems);
  CHECK(has_line(text, "Requires-Dist: torch>=2.10,<2.12"));
  CHECK(has_line(text, "Requires-Dist: torch; extra == \"vision\""));
}

TEST_CASE("release series: specifiers are evaluated on release segments") {
  auto admits = [](std::string_view spec, int major, int minor) {
    std::string why;
    auto result = admits_release_series(spec, major, minor, why);
    REQUIRE_MESSAGE(result, why);
    return *result;
  };
  CHECK(admits("", 2, 10));
  CHECK(admits(">=2.10", 2, 10));
  CHECK_FALSE(admits(">=2.11", 2, 10));
  CHECK(admits(">2.10", 2, 10));         // 2.10.1
  CHECK(admits(">2.10.999999", 2, 10));  // 2.10.999999.1 is still 2.10
  CHECK(admits("<2.11", 2, 10));
  CHECK_FALSE(admits("<2.10", 2, 10));
  CHECK_FALSE(admits("<=2.9.9", 2, 10));
  CHECK(admits("<=2.10", 2, 10));
  CHECK(admits("==2.10.*", 2, 10));
  CHECK(admits("==2.*", 2, 10));
  CHECK_FALSE(admits("==2.1.*", 2, 10));
  CHECK_FALSE(admits("==2.11.*", 2, 10));
  CHECK_FALSE(admits("!=2.10.*", 2, 10));
  CHECK(admits("!=2.10.0", 2, 10));  // 2.10.1
  CHECK(admits("==2.10.3", 2, 10));
  CHECK(admits("==2.10", 2, 10));
  CHECK_FALSE(admits("==2.1", 2, 10));
  CHECK(admits("~=2.10.1", 2, 10));
  CHECK_FALSE(admits("~=2.9.1", 2, 10));
  CHECK(admits("~=2.9", 2, 10));
  CHECK_FALSE(admits("~=3.0", 2, 10));
  CHECK(admits(">=2.10.1,<2.10.2", 2, 10));
  CHECK_FALSE(admits(">=2.10.2,<2.10.2", 2, 10));
  CHECK(admits(">2.10.1,<2.10.2", 2, 10));  // 2.10.1.1
  CHECK_FALSE(admits(">=2.10.1,!=2.10.*", 2, 10));
  CHECK(admits("!=2.10.0,!=2.10.1,<2.10.3", 2, 10));  // 2.10.2
  CHECK_FALSE(admits(">2.10.1,<2.10.1.0", 2, 10));
  std::string why;
  CHECK_FALSE(admits_release_series("===2.10.0", 2, 10, why));
  CHECK(why.find("===") != std::string::npos);
  CHECK_FALSE(admits_release_series(">=2.10.0.post1", 2, 10, why));
  CHECK_FALSE(admits_release_series(">=1!2.10", 2, 10, why));
  CHECK_FALSE(admits_release_series("==2.10.0+cu128", 2, 10, why));
}

TEST_CASE("release series: the covering specifier") {
  std::string why;
  CHECK(series_specifier({{2, 11}, {2, 10}}, why) == ">=2.10,<2.12");
  CHECK(series_specifier({{2, 10}, {2, 10}}, why) == ">=2.10,<2.11");
  CHECK(series_specifier({{2, 8}, {2, 11}}, why) == ">=2.8,<2.12,!=2.9.*,!=2.10.*");
  CHECK(series_specifier({{2, 9}, {3, 0}}, why).empty());
  CHECK(why.find("different majors") != std::string::npos);
}

TEST_CASE("metadata: a wheel without its label is the caller's error, said as one, not taken for a build of no torch") {
  Wheel a = build("torch210_cu12", {"torch>=2.10,<2.11"});
  Wheel b = build("torch211_cu12", {"torch>=2.11,<2.12"});
  Problems problems;
  REQUIRE(merge_metadata({&a, &b}, "1.0", problems));
  b.label.reset();  // plan_merge refuses such an input before merge_metadata sees it
  CHECK_THROWS_AS(merge_metadata({&a, &b}, "1.0", problems), std::logic_error);
  CHECK(problems.empty());
}

// The passes of merge_metadata, one by one.
using metadata_passes::Share;
using metadata_passes::Shares;

TEST_CASE("metadata pass check_fixed_fields: a conflict per differing build; renaming frees Name and description") {
  Wheel a = build_with("cu11", {{"Name", "pkg-cu11"}, {"Summary", "s"}, {"Description", "for 11"}}, "body 11");
  Wheel b = build_with("cu12", {{"Name", "pkg-cu12"}, {"Summary", "s"}, {"Description", "for 12"}}, "body 12");
  Wheel c = build_with("cu13", {{"Name", "pkg-cu13"}, {"Summary", "t"}, {"Description", "for 13"}}, "body 13");
  Problems problems;
  metadata_passes::check_fixed_fields({&a, &b, &c}, true, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == a.display + ", " + c.display);
  CHECK(problems[0].what == "METADATA field Summary differs between builds");
  CHECK(problems[0].found == "\"t\" in " + c.display);
  problems.clear();
  metadata_passes::check_fixed_fields({&a, &b, &c}, false, problems);
  REQUIRE(problems.size() == 4);  // Name (the first field that differs) and the body, for b and for c
  CHECK(problems[0].what == "METADATA field Name differs between builds");
  CHECK(problems[1].what == "METADATA description differs between builds");
  CHECK(problems[2].file == a.display + ", " + c.display);
  CHECK(problems[2].what == "METADATA field Name differs between builds");
  CHECK(problems[3].file == a.display + ", " + c.display);
}

TEST_CASE("metadata pass share_requirements: counted once per build; torch ones apart only when combined") {
  Wheel a = build("cu12", {"x", "x", "torch>=2.10", "y", "torch; extra == \"vision\""});
  Wheel b = build("cu13", {"Y", "torch>=2.10", "z", "torch ; extra == 'vision'"});
  // `x` twice in one build is still in one build only.
  CHECK(metadata_passes::share_requirements({&a, &b}, true) ==
        Shares{{Share::own, Share::own, Share::torch, Share::common, Share::common},
               {Share::common, Share::torch, Share::own, Share::common}});
  CHECK(metadata_passes::share_requirements({&a, &b}, false) ==
        Shares{{Share::own, Share::own, Share::common, Share::common, Share::common},
               {Share::common, Share::common, Share::own, Share::common}});
}

TEST_CASE("metadata pass split_extras: the own requirements' extras in order of appearance, normalized, once") {
  Wheel a = build(
      "cu12", {"p; extra == \"Full_GPU\"", "q; extra == \"shared\"", "r; extra == \"ctk\" or extra == \"full-gpu\""});
  Wheel b = build("cu13", {"q; extra == \"shared\"", "s; extra == \"dev\"", "p>=1; extra == \"full.gpu\""});
  Problems problems;
  auto shares = metadata_passes::share_requirements({&a, &b}, false);
  CHECK(metadata_passes::split_extras({&a, &b}, shares, problems) ==
        std::vector<std::string>{"full-gpu", "ctk", "dev"});
  CHECK(problems.empty());
}

TEST_CASE("metadata pass split_extras: an invalid extra name is one conflict per requirement, and checked first") {
  Wheel a = build("cu12", {"p; extra == 'a b' or extra == 'c d'", "q; extra == 'e f' or extra != 'g'"});
  Wheel b = build("cu13", {"p>=1; extra == 'a b' or extra == 'c d'"});
  Problems problems;
  auto shares = metadata_passes::share_requirements({&a, &b}, false);
  CHECK(metadata_passes::split_extras({&a, &b}, shares, problems).empty());
  REQUIRE(problems.size() == 3);  // not one per bad name, nor the != comparison of q
  for (const Problem& p : problems) CHECK(p.what.find("no valid extra name") != std::string::npos);
  CHECK(problems[1].found == "q; extra == \"e f\" or extra != \"g\"");
  CHECK(problems[2].file == b.display);
}

TEST_CASE("metadata pass name_build_extras: extra by extra, build by build; a name the first build declares is taken") {
  Wheel a = build("cu12", {});
  Wheel b = build("cu13", {});
  a.metadata.fields.push_back({"Provides-Extra", "Full_CU13"});
  Problems problems;
  CHECK(metadata_passes::name_build_extras({&a, &b}, {"ctk", "full"}, problems) ==
        std::vector<std::string>{"ctk-cu12", "ctk-cu13", "full-cu12"});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == b.display);
  CHECK(problems[0].what ==
        "the requirements of extra full differ between builds, but the per-build extra's name is taken");
  CHECK(problems[0].found == "Provides-Extra: full-cu13");
}

TEST_CASE("metadata pass common_requirements: torch where the first build had it; others as written or widened") {
  Wheel a =
      build("cu12", {"numpy", "torch>=2.10", "mpmath ; extra == 'ctk'", "torch<3", "only-a", "scipy ;extra=='full'"});
  Wheel b = build("cu13", {"numpy", "torch>=2.11", "mpmath; extra == \"ctk\"", "scipy; extra == \"full\""});
  std::string error;
  std::optional<Requirement> torch = parse_requirement("torch>=2.10,<2.12", error);
  REQUIRE(torch);
  auto shares = metadata_passes::share_requirements({&a, &b}, true);
  CHECK(metadata_passes::common_requirements({&a, &b}, shares, {"ctk"}, torch) ==
        std::vector<std::string>{"numpy", "torch>=2.10,<2.12",
                                 "mpmath; extra == \"ctk\" or extra == \"ctk-cu12\" or extra == \"ctk-cu13\"",
                                 "scipy ;extra=='full'"});
  // A first build without a torch requirement: the combined one last.
  Wheel c = build("cu12", {"numpy", "six"});
  Wheel d = build("cu13", {"six", "numpy"});
  CHECK(metadata_passes::common_requirements({&c, &d}, metadata_passes::share_requirements({&c, &d}, true), {},
                                             torch) == std::vector<std::string>{"numpy", "six", "torch>=2.10,<2.12"});
  CHECK(metadata_passes::common_requirements({&c, &d}, metadata_passes::share_requirements({&c, &d}, false), {},
                                             std::nullopt) == std::vector<std::string>{"numpy", "six"});
}

TEST_CASE("metadata pass add_own_requirements: each build's own, conditional; a label's extra declared once") {
  Wheel a = build("cu12", {"numpy", "cupy-cuda12x", "fastrlock; extra == 'ctk'"});
  Wheel b = build("cu13", {"numpy", "cupy-cuda13x"});
  Wheel c = build("cu14", {"numpy", "fastrlock>=1; extra == 'ctk'"});
  metadata_passes::RequirementBlock block{{"CU12"}, {"numpy"}};
  Problems problems;
  auto shares = metadata_passes::share_requirements({&a, &b, &c}, false);
  // cu14 has requirements of its own, but only on an extra: no cu14 extra.
  CHECK(label_strings(metadata_passes::add_own_requirements({&a, &b, &c}, shares, block, problems)) ==
        std::vector<std::string>{"cu12", "cu13"});
  CHECK(problems.empty());
  CHECK(block.extras == std::vector<std::string>{"CU12", "cu13"});
  CHECK(block.requirements ==
        std::vector<std::string>{"numpy", "cupy-cuda12x; extra == \"cu12\"", "fastrlock; extra == \"ctk-cu12\"",
                                 "cupy-cuda13x; extra == \"cu13\"", "fastrlock>=1; extra == \"ctk-cu14\""});
}

TEST_CASE("metadata pass add_own_requirements: a requirement that its condition makes too long is a conflict") {
  std::string marker = "x; os_name == \"";
  marker += std::string(kMaxRequirementBytes - marker.size() - 1, 'n') + "\"";
  Wheel a = build("cu12", {marker});
  Wheel b = build("cu13", {"y"});
  metadata_passes::RequirementBlock block;
  Problems problems;
  auto shares = metadata_passes::share_requirements({&a, &b}, false);
  metadata_passes::add_own_requirements({&a, &b}, shares, block, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].file == a.display);
  CHECK(problems[0].what == "a requirement made conditional on its build's extra would pass the length limit");
  CHECK(problems[0].expected == fmt::format("at most {} bytes", kMaxRequirementBytes));
  CHECK(block.requirements == std::vector<std::string>{"y; extra == \"cu13\""});
}

TEST_CASE("metadata pass render_metadata: the block where the first build's extras or requirements began") {
  Wheel a = build_with("cu12", {{"Metadata-Version", "2.1"},
                                {"Name", "pkg"},
                                {"Version", "1.0+cu12"},
                                {"Provides-Extra", "x"},
                                {"Summary", "s"},
                                {"Requires-Dist", "numpy"},
                                {"License", "MIT"}});
  const metadata_passes::RequirementBlock block{{"x", "cu12"}, {"numpy", "r; extra == \"cu12\""}};
  Problems problems;
  auto text = metadata_passes::render_metadata({&a}, "1.0", "", block, problems);
  REQUIRE(text);
  CHECK(fields_of(*text) == std::vector<Header>{{"Metadata-Version", "2.1"},
                                                {"Name", "pkg"},
                                                {"Version", "1.0"},
                                                {"Provides-Extra", "x"},
                                                {"Provides-Extra", "cu12"},
                                                {"Requires-Dist", "numpy"},
                                                {"Requires-Dist", "r; extra == \"cu12\""},
                                                {"Summary", "s"},
                                                {"License", "MIT"}});
  // Without extras or requirements, the block goes last; renamed, a Description field follows it.
  Wheel b = build_with("cu12", {{"Name", "pkg-cu12"}, {"Description", "D"}, {"Version", "1.0"}});
  Wheel c = build_with("cu13", {{"Name", "pkg-cu13"}, {"Description", "D"}, {"Version", "1.0"}});
  text = metadata_passes::render_metadata({&b, &c}, "1.0", "pkg", block, problems);
  REQUIRE(text);
  CHECK(fields_of(*text) == std::vector<Header>{{"Name", "pkg"},
                                                {"Version", "1.0"},
                                                {"Provides-Extra", "x"},
                                                {"Provides-Extra", "cu12"},
                                                {"Requires-Dist", "numpy"},
                                                {"Requires-Dist", "r; extra == \"cu12\""},
                                                {"Description", "D"}});
  CHECK(problems.empty());
}

TEST_CASE("metadata pass render_metadata: a METADATA over the size limit is a conflict") {
  Wheel a = build("cu12", {"numpy"});
  const metadata_passes::RequirementBlock block{{}, {std::string(kMaxMetadataFile, 'x')}};
  Problems problems;
  CHECK_FALSE(metadata_passes::render_metadata({&a}, "1.0", "", block, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].member == a.dist_info + "/METADATA");
  CHECK(problems[0].what == "the merged METADATA would pass the size limit");
}

TEST_CASE("metadata pass note_loader_needs: cuda-bindings by either name; runtime extras among the per-build ones") {
  Wheel a = build("cu12", {"Cuda_Python>=12", "cuda-toolkit[cudart]==12.*; extra == 'CTK'",
                           "nvidia-cuda-runtime-cu12; extra == 'ctk'", "cuda-toolkit; extra == 'other'",
                           "nvidia-cublas-cu12; extra == 'blas'"});
  Wheel b = build("cu13", {"numpy", "cuda-toolkit==13.*"});
  MergedMetadata result;
  result.build_extras = {"ctk-cu12", "ctk-cu13", "blas-cu12", "blas-cu13"};
  metadata_passes::note_loader_needs({&a, &b}, result);
  CHECK(result.cuda_bindings);
  CHECK(result.runtime_extras.at("cu12"_label) == std::vector<std::string>{"ctk-cu12"});
  CHECK(result.runtime_extras.count("cu13"_label) == 0);  // its toolkit is on no extra
  MergedMetadata none;
  metadata_passes::note_loader_needs({&b}, none);
  CHECK_FALSE(none.cuda_bindings);
  Wheel c = build("cu13", {"cuda-bindings~=13.0"});
  metadata_passes::note_loader_needs({&c}, none);
  CHECK(none.cuda_bindings);
}
