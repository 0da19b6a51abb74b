#include "merger/merge.hpp"

#include "labels.hpp"
#include "merger/format/manifest.hpp"
#include "merger/loader.hpp"
#include "merger/zip/member_stream.hpp"
#include "wheel_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace wm;
using namespace wm::test;
using namespace wm::test_labels;

namespace {

const DosTime kTime = dos_time_from_epoch(1700000000);
const std::string kMerged = "pkg-1.0-cp311-cp311-linux_x86_64.whl";

std::string problems_text(const Problems& problems) {
  std::string out;
  for (const Problem& p : problems) out += describe(p) + "\n";
  return out;
}

// The text of `member` in the wheel at `path`.
std::string member_text(const Wheel& w, const std::string& member) {
  const WheelFile* f = w.find(member);
  REQUIRE_MESSAGE(f, member);
  Problems problems;
  auto bytes = read_member(w.zip, w.zip.entries[f->entry], f->size, w.display, problems);
  REQUIRE(bytes);
  return std::move(*bytes);
}

}  // namespace

TEST_CASE("merge: two builds make one wheel without a label, with a loader and labelled variant files") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = cuda_build(13).write(dir.sub("in"));
  const fs::path out = dir.path / "out";  // created by the merge
  Problems problems;
  auto result = merge_wheels({{cu12, ""}, {cu13, ""}}, {}, out.string(), kTime, problems);
  REQUIRE_MESSAGE(result, problems_text(problems));
  CHECK(problems.empty());
  CHECK(result->output == (out / kMerged).string());
  CHECK(listing(out) == std::vector<std::string>{kMerged});
  CHECK(result->inputs.size() == 2);
  CHECK(label_strings(result->plan.labels) == std::vector<std::string>{"cu12", "cu13"});
  CHECK(result->plan.loader_packages == std::vector<std::string>{"pkg"});
  // The inputs are left as they were.
  CHECK(listing(dir.path / "in").size() == 2);

  Problems read_problems;
  auto merged = read_wheel(WheelInput{result->output, {}}, read_problems);
  REQUIRE_MESSAGE(merged, problems_text(read_problems));
  CHECK(merged->warnings.empty());
  CHECK_FALSE(merged->label);  // the merged wheel names none
  CHECK(merged->name.version == "1.0");
  CHECK(merged->dist_info == "pkg-1.0.dist-info");
  std::vector<std::string> paths;
  for (const WheelFile& f : merged->files) paths.emplace_back(f.path);
  std::vector<std::string> sorted = paths;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<std::string>{"pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/RECORD",
                                           "pkg-1.0.dist-info/WHEEL", "pkg/__init__.py",
                                           "pkg/_core.cu12.cpython-311-x86_64-linux-gnu.so",
                                           "pkg/_core.cu13.cpython-311-x86_64-linux-gnu.so", "pkg/_wheelmerge.py",
                                           "pkg/_wheelmerge_rules.py", "pkg/util.py"});
  CHECK(paths.back() == "pkg-1.0.dist-info/RECORD");

  // Each build's extension module, byte for byte, under its labelled name; the shared module once.
  CHECK(member_text(*merged, "pkg/_core.cu12.cpython-311-x86_64-linux-gnu.so") == cuda_build(12).files.at(kCoreModule));
  CHECK(member_text(*merged, "pkg/_core.cu13.cpython-311-x86_64-linux-gnu.so") == cuda_build(13).files.at(kCoreModule));
  CHECK(member_text(*merged, "pkg/util.py") == "X = 1\n");
  // The package imports its loader, after the docstring.
  CHECK(member_text(*merged, "pkg/__init__.py") ==
        "\"\"\"A test package.\"\"\"\n" + std::string(kLoaderImport) + "from .util import X\n");
  // The loader's manifest names both builds' modules.
  std::string why;
  auto manifest = manifest_of_loader(member_text(*merged, "pkg/_wheelmerge.py"), why);
  REQUIRE_MESSAGE(manifest, why);
  CHECK(manifest->package == "pkg");
  CHECK(manifest->distribution == "pkg");
  CHECK(label_strings(manifest->variants) == std::vector<std::string>{"cu12", "cu13"});
  CHECK(manifest->extras.at("cu12"_label) == std::vector<std::string>{"cu12"});
  CHECK(manifest->extras.at("cu13"_label) == std::vector<std::string>{"cu13"});
  CHECK(manifest->extras.size() == 2);
  CHECK(manifest->builds.at("cu12"_label).modules ==
        std::map<std::string, std::string>{{"pkg._core", "_core.cu12.cpython-311-x86_64-linux-gnu.so"}});
  CHECK(manifest->builds.at("cu13"_label).modules ==
        std::map<std::string, std::string>{{"pkg._core", "_core.cu13.cpython-311-x86_64-linux-gnu.so"}});
  // METADATA: the differing requirements as extras, the shared one kept.
  std::string metadata = member_text(*merged, "pkg-1.0.dist-info/METADATA");
  CHECK(metadata.find("Version: 1.0\n") != std::string::npos);
  CHECK(metadata.find("Requires-Dist: numpy>=1.24\n") != std::string::npos);
  CHECK(metadata.find("Requires-Dist: cuda-bindings>=12,<13; extra == \"cu12\"\n") != std::string::npos);
  CHECK(metadata.find("Requires-Dist: cuda-bindings>=13,<14; extra == \"cu13\"\n") != std::string::npos);
}

TEST_CASE("merge: one build keeps its files and names, and gets a loader that imports its extension modules") {
  TempDir dir;
  const std::string cu13 = cuda_build(13).write(dir.sub("in"));
  const fs::path out = dir.path / "out";
  Problems problems;
  auto result = merge_wheels({{cu13, ""}}, {}, out.string(), kTime, problems);
  REQUIRE_MESSAGE(result, problems_text(problems));
  CHECK(result->plan.warnings.empty());
  CHECK(label_strings(result->plan.labels) == std::vector<std::string>{"cu13"});
  CHECK(result->plan.loader_packages == std::vector<std::string>{"pkg"});
  Problems read_problems;
  auto merged = read_wheel(WheelInput{result->output, {}}, read_problems);
  REQUIRE_MESSAGE(merged, problems_text(read_problems));
  std::vector<std::string> paths;
  for (const WheelFile& f : merged->files) paths.emplace_back(f.path);
  std::sort(paths.begin(), paths.end());
  CHECK(paths == std::vector<std::string>{"pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/RECORD",
                                          "pkg-1.0.dist-info/WHEEL", "pkg/__init__.py",
                                          "pkg/_core.cpython-311-x86_64-linux-gnu.so", "pkg/_wheelmerge.py",
                                          "pkg/_wheelmerge_rules.py", "pkg/util.py"});
  CHECK(member_text(*merged, "pkg/_core.cpython-311-x86_64-linux-gnu.so") == cuda_build(13).files.at(kCoreModule));
  std::string why;
  auto manifest = manifest_of_loader(member_text(*merged, "pkg/_wheelmerge.py"), why);
  REQUIRE_MESSAGE(manifest, why);
  CHECK(label_strings(manifest->variants) == std::vector<std::string>{"cu13"});
  CHECK(manifest->builds.at("cu13"_label).modules ==
        std::map<std::string, std::string>{{"pkg._core", "_core.cpython-311-x86_64-linux-gnu.so"}});
  // Its requirement stays as the build had it (an extra per build only where builds differ).
  CHECK(member_text(*merged, "pkg-1.0.dist-info/METADATA").find("Requires-Dist: cuda-bindings>=13,<14\n") !=
        std::string::npos);
}

TEST_CASE("merge: the output is the same, byte for byte, whatever the order of the inputs") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = cuda_build(13).write(dir.sub("in"));
  Problems problems;
  auto forward = merge_wheels({{cu12, ""}, {cu13, ""}}, {}, dir.sub("a").string(), kTime, problems);
  auto backward = merge_wheels({{cu13, ""}, {cu12, ""}}, {}, dir.sub("b").string(), kTime, problems);
  REQUIRE_MESSAGE((forward && backward), problems_text(problems));
  CHECK(fs::path(forward->output).filename() == fs::path(backward->output).filename());
  CHECK(read_file_bytes(forward->output) == read_file_bytes(backward->output));
}

TEST_CASE("merge: labels given as PATH=LABEL and as +cuNN local versions") {
  TempDir dir;
  WheelBuilder a = cuda_build(12), b = cuda_build(13);
  a.filename = "pkg-1.0-cp311-cp311-linux_x86_64.whl";  // labelled on the command line
  b.filename = "pkg-1.0+cu13-cp311-cp311-linux_x86_64.whl";
  const std::string pa = a.write(dir.sub("in12")), pb = b.write(dir.sub("in13"));
  Problems problems;
  auto result = merge_wheels({{pa, "cu12"}, {pb, ""}}, {}, dir.sub("out").string(), kTime, problems);
  REQUIRE_MESSAGE(result, problems_text(problems));
  CHECK(fs::path(result->output).filename() == kMerged);
  CHECK(label_strings(result->plan.labels) == std::vector<std::string>{"cu12", "cu13"});
}

TEST_CASE("merge: torch and CPU-level labels in every form; the manifest names their selector") {
  struct Case {
    std::vector<std::string> labels;        // the builds' labels, lowest first
    std::vector<std::string> version_form;  // how each input carries it: "suffix", "local" or "argument"
    std::string selector;
  };
  for (const Case& c : {Case{{"torch210_cu12", "torch211_cu13"}, {"suffix", "local"}, "torch"},
                        Case{{"x86_64_v1", "x86_64_v3", "x86_64_v4"}, {"local", "argument", "suffix"}, "cpu"}}) {
    CAPTURE(c.selector);
    TempDir dir;
    std::vector<WheelInput> inputs;
    for (size_t i = c.labels.size(); i-- > 0;) {  // highest first: the order of inputs does not matter
      const std::string& label = c.labels[i];
      WheelBuilder b = cuda_build(12);
      b.metadata_extra = {"Summary: one build per " + c.selector};
      b.files[kCoreModule] = "extension module built for " + label;
      std::string local = label;
      std::replace(local.begin(), local.end(), '_', '.');  // a local version normalized
      b.filename = c.version_form[i] == "suffix"  ? "pkg-1.0-cp311-cp311-linux_x86_64." + label + ".whl"
                   : c.version_form[i] == "local" ? "pkg-1.0+" + local + "-cp311-cp311-linux_x86_64.whl"
                                                  : "pkg-1.0-cp311-cp311-linux_x86_64.whl";
      inputs.push_back({b.write(dir.sub("in" + std::to_string(i))), c.version_form[i] == "argument" ? label : ""});
    }
    Problems problems;
    auto result = merge_wheels(inputs, {}, dir.sub("out").string(), kTime, problems);
    REQUIRE_MESSAGE(result, problems_text(problems));
    CHECK(label_strings(result->plan.labels) == c.labels);
    CHECK(fs::path(result->output).filename() == kMerged);
    Problems read_problems;
    auto merged = read_wheel(WheelInput{result->output, {}}, read_problems);
    REQUIRE_MESSAGE(merged, problems_text(read_problems));
    for (const std::string& label : c.labels)
      CHECK(merged->find("pkg/_core." + label + ".cpython-311-x86_64-linux-gnu.so"));
    std::string why;
    std::string loader = member_text(*merged, "pkg/_wheelmerge.py");
    auto manifest = manifest_of_loader(loader, why);
    REQUIRE_MESSAGE(manifest, why);
    CHECK(selector_name(manifest->selector) == c.selector);
    CHECK(label_strings(manifest->variants) == c.labels);
  }
}

TEST_CASE("merge: labels of different selectors are a usage error naming both") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("a"));
  WheelBuilder cpu = cuda_build(13);
  cpu.filename = "pkg-1.0-cp311-cp311-linux_x86_64.x86_64_v3.whl";
  const std::string v3 = cpu.write(dir.sub("b"));
  Problems problems;
  CHECK_FALSE(merge_wheels({{cu12, ""}, {v3, ""}}, {}, dir.sub("out").string(), kTime, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::usage);
  CHECK(problems[0].what == "variant labels of different selectors");
  CHECK(problems[0].file == v3);
  CHECK(problems[0].expected == "a cuda label, as " + cu12 + " has (cu12)");
  CHECK(problems[0].found == "x86_64_v3 (selector cpu)");
  CHECK(listing(dir.path / "out").empty());
}

TEST_CASE("merge: a second merge into the same directory replaces the older output") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = cuda_build(13).write(dir.sub("in"));
  Problems problems;
  auto first = merge_wheels({{cu12, ""}, {cu13, ""}}, {}, dir.sub("out").string(), kTime, problems);
  auto second = merge_wheels({{cu12, ""}, {cu13, ""}}, {}, dir.sub("out").string(), kTime, problems);
  REQUIRE_MESSAGE((first && second), problems_text(problems));
  CHECK(listing(dir.path / "out") == std::vector<std::string>{kMerged});
}

TEST_CASE("merge: usage problems are found before any input is read") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = cuda_build(13).write(dir.sub("in"));
  WheelBuilder plain = cuda_build(12);
  plain.filename = "pkg-1.0-cp311-cp311-linux_x86_64.whl";
  const std::string unlabelled = plain.write(dir.sub("plain"));
  const fs::path out = dir.path / "out";

  auto usage = [&](const std::vector<WheelInput>& inputs) {
    Problems problems;
    CHECK_FALSE(merge_wheels(inputs, {}, out.string(), kTime, problems));
    REQUIRE_FALSE(problems.empty());
    for (const Problem& p : problems) CHECK(p.kind == ProblemKind::usage);
    CHECK(exit_code(problems) == 2);
    CHECK_FALSE(fs::exists(out));
    return problems;
  };

  SUBCASE("no input") {
    Problems problems = usage({});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "no input wheels");
    CHECK(problems[0].found == "none");
  }
  SUBCASE("one input without a label") {
    Problems problems = usage({{unlabelled, ""}});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "no variant label");
  }
  SUBCASE("an input without a label") {
    Problems problems = usage({{cu12, ""}, {unlabelled, ""}});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "no variant label");
    CHECK(problems[0].file == unlabelled);
  }
  SUBCASE("an invalid label") {
    Problems problems = usage({{cu12, ""}, {unlabelled, "cu012"}});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "invalid variant label");
    CHECK(problems[0].found == "cu012");
    CHECK(problems[0].file == unlabelled);
  }
  SUBCASE("two inputs with one label") {
    Problems problems = usage({{cu12, ""}, {unlabelled, "cu12"}});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "two inputs with the same variant label");
    CHECK(problems[0].file == unlabelled);
    CHECK(problems[0].found == "cu12, the label of " + cu12 + " as well");
  }
  SUBCASE("an input naming two labels") {
    Problems problems = usage({{cu12, ""}, {cu13, "cu12"}});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "the input names different variant labels");
    CHECK(problems[0].file == cu13);
    CHECK(problems[0].found == "cu12 (PATH=LABEL) and cu13 (.LABEL suffix)");
  }
  SUBCASE("every usage problem is reported, inputs that do not exist included") {
    Problems problems = usage({{(dir.path / "missing.whl").string(), ""}, {unlabelled, "cu012"}});
    CHECK(problems.size() == 2);
  }
}

TEST_CASE("merge: input_label reads an input's label, and with --name the name's CUDA suffix") {
  MergeOptions options;
  auto suffix = input_label({"d/pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl", ""}, options);
  REQUIRE(suffix);
  CHECK(suffix->label == "cu12"_label);
  CHECK(suffix->form == ".LABEL suffix");
  const WheelInput named{"d/cupy_cuda13x-1.0-cp311-cp311-linux_x86_64.whl", ""};
  CHECK_FALSE(input_label(named, options));  // without --name, names give no labels
  options.name = "cupy";
  auto from_name = input_label(named, options);
  REQUIRE(from_name);
  CHECK(from_name->label == "cu13"_label);
  CHECK(from_name->text == "cu13");
  // A PATH=LABEL comes first, and is kept as given where it is no label.
  auto invalid = input_label({named.path, "cu1x"}, options);
  REQUIRE(invalid);
  CHECK_FALSE(invalid->label);
  CHECK(invalid->text == "cu1x");
  CHECK(invalid->why == "cu followed by the CUDA major");
}

TEST_CASE("merge: read_inputs gives each wheel the label its input names") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  WheelBuilder plain = cuda_build(13);
  plain.filename = "pkg-1.0-cp311-cp311-linux_x86_64.whl";
  const std::string unlabelled = plain.write(dir.sub("plain"));
  Problems problems;
  auto wheels = read_inputs({{unlabelled, "cu13"}, {cu12, ""}}, {}, problems);
  REQUIRE_MESSAGE(wheels, problems_text(problems));
  REQUIRE(wheels->size() == 2);
  CHECK((*wheels)[0].label == "cu13"_label);  // in input order
  CHECK((*wheels)[1].label == "cu12"_label);
}

TEST_CASE("merge: a pure-Python file that differs between builds is a conflict, and nothing is written") {
  TempDir dir;
  WheelBuilder b13 = cuda_build(13);
  b13.files["pkg/util.py"] = "X = 2\n";
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = b13.write(dir.sub("in"));
  const fs::path out = dir.sub("out");
  Problems problems;
  CHECK_FALSE(merge_wheels({{cu12, ""}, {cu13, ""}}, {}, out.string(), kTime, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].member == "pkg/util.py");
  CHECK(problems[0].what.find("differs between builds") != std::string::npos);
  CHECK(exit_code(problems) == 4);
  CHECK(listing(out).empty());
  CHECK(listing(dir.path / "in").size() == 2);
}

TEST_CASE("merge: --variant-file lets a matching pure-Python file differ") {
  TempDir dir;
  WheelBuilder b13 = cuda_build(13);
  b13.files["pkg/util.py"] = "X = 2\n";
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = b13.write(dir.sub("in"));
  MergeOptions options;
  options.variant_globs = {"pkg/util.py"};
  Problems problems;
  auto result = merge_wheels({{cu12, ""}, {cu13, ""}}, options, dir.sub("out").string(), kTime, problems);
  REQUIRE_MESSAGE(result, problems_text(problems));
  Problems read_problems;
  auto merged = read_wheel(WheelInput{result->output, {}}, read_problems);
  REQUIRE(merged);
  CHECK(merged->find("pkg/util.cu12.py"));
  CHECK(merged->find("pkg/util.cu13.py"));
  CHECK_FALSE(merged->find("pkg/util.py"));
}

TEST_CASE("merge: every invalid input is reported, and nothing is written") {
  TempDir dir;
  WheelBuilder b12 = cuda_build(12), b13 = cuda_build(13);
  b12.unrecorded = {"pkg/util.py"};
  b13.record_hash[kCoreModule] = "sha256=" + sha256_b64("other");
  const std::string cu12 = b12.write(dir.sub("in"));
  const std::string cu13 = b13.write(dir.sub("in"));
  const fs::path out = dir.sub("out");
  Problems problems;
  CHECK_FALSE(merge_wheels({{cu13, ""}, {cu12, ""}}, {}, out.string(), kTime, problems));
  REQUIRE(problems.size() == 2);
  // In input order.
  CHECK(problems[0].file == b13.filename);
  CHECK(problems[0].member == kCoreModule);
  CHECK(problems[1].file == b12.filename);
  CHECK(problems[1].member == "pkg/util.py");
  for (const Problem& p : problems) CHECK(p.kind == ProblemKind::invalid_input);
  CHECK(listing(out).empty());
}

TEST_CASE("merge: builds of different versions are refused") {
  TempDir dir;
  WheelBuilder b13 = cuda_build(13);
  b13.filename = "pkg-1.1-cp311-cp311-linux_x86_64.cu13.whl";
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu13 = b13.write(dir.sub("in"));
  const fs::path out = dir.sub("out");
  Problems problems;
  CHECK_FALSE(merge_wheels({{cu12, ""}, {cu13, ""}}, {}, out.string(), kTime, problems));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems[0].what.find("different version") != std::string::npos);
  CHECK(listing(out).empty());
}
