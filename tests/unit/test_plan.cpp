#include "merger/plan.hpp"

#include "labels.hpp"
#include "merger/base/problem.hpp"
#include "merger/format/manifest.hpp"
#include "merger/loader.hpp"
#include "merger/verify.hpp"
#include "merger/version.hpp"
#include "plan_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace wm;
using namespace wm::test_labels;
using wm::plantest::hash_of;
using wm::plantest::ModelBuilder;
using wm::plantest::so_name;

TEST_CASE("plan: variant files keep their directory and carry the label in their name") {
  CHECK(labelled_path("pkg/_core.cpython-311-x86_64-linux-gnu.so", "cu12"_label) ==
        "pkg/_core.cu12.cpython-311-x86_64-linux-gnu.so");
  CHECK(labelled_path("pkg.libs/libcudart-1a2b.so.12", "cu12"_label) == "pkg.libs/libcudart-1a2b.cu12.so.12");
  CHECK(labelled_path("pkg/kernels/x.cubin", "cu13"_label) == "pkg/kernels/x.cu13.cubin");
  CHECK(labelled_path("pkg/data", "cu13"_label) == "pkg/data.cu13");
  CHECK(labelled_path(".hidden", "cu13"_label) == ".hidden.cu13");
}

TEST_CASE("plan: private libraries are preloaded dependencies first") {
  ElfInfo a{true, "liba.so.1", {"libb.so.1", "libc.so.6"}};
  ElfInfo b{true, "libb.so.1", {"libc.so.1"}};
  ElfInfo c{true, "libc.so.1", {}};
  CHECK(preload_order({&a, &b, &c}) == std::vector<size_t>{2, 1, 0});
  CHECK(preload_order({&c, &b, &a}) == std::vector<size_t>{0, 1, 2});
  // Independent libraries keep the given order; a cycle is broken in it.
  ElfInfo x{true, "libx.so", {"liby.so"}}, y{true, "liby.so", {"libx.so"}};
  CHECK(preload_order({&x, &y}) == std::vector<size_t>{0, 1});
  CHECK(preload_order({&y, &x, &c}) == std::vector<size_t>{2, 0, 1});
}

TEST_CASE("plan: a long chain of private libraries is ordered in n log n") {
  const size_t n = 20000;  // lib0 needs lib1 needs ... lib19999
  std::vector<ElfInfo> infos(n);
  for (size_t i = 0; i < n; ++i) {
    infos[i].shared_object = true;
    infos[i].soname = "lib" + std::to_string(i) + ".so";
    if (i + 1 < n) infos[i].needed = {"lib" + std::to_string(i + 1) + ".so"};
  }
  std::vector<const ElfInfo*> libs;
  for (const ElfInfo& info : infos) libs.push_back(&info);
  std::vector<size_t> order = preload_order(libs);
  REQUIRE(order.size() == n);
  for (size_t k = 0; k < n; ++k) CHECK_EQ(order[k], n - 1 - k);
}

namespace {

const std::string kCore = so_name("pkg/_core");  // pkg/_core.cpython-312-x86_64-linux-gnu.so
const std::string kInit = "\"\"\"Demo.\"\"\"\nimport os\n";
const std::string kPatchedInit = "\"\"\"Demo.\"\"\"\n" + std::string(kLoaderImport) + "import os\n";

std::string all_problems(const Problems& problems) {
  std::string out;
  for (const Problem& p : problems) out += describe(p) + "\n";
  return out;
}

MergePlan plan_ok(const std::vector<Wheel>& wheels, const MergeOptions& options = {}) {
  Problems problems;
  auto plan = plan_merge(wheels, options, problems);
  REQUIRE_MESSAGE(plan, all_problems(problems));
  CHECK_MESSAGE(problems.empty(), all_problems(problems));
  return *plan;
}

Problems plan_refused(const std::vector<Wheel>& wheels, const MergeOptions& options = {}) {
  Problems problems;
  auto plan = plan_merge(wheels, options, problems);
  CHECK_FALSE(plan);
  CHECK_FALSE(problems.empty());
  return problems;
}

const Problem* problem_about(const Problems& problems, const std::string& member) {
  for (const Problem& p : problems)
    if (p.member == member) return &p;
  return nullptr;
}

const PlannedMember* find_member(const MergePlan& plan, const std::string& path) {
  for (const PlannedMember& m : plan.members)
    if (m.path == path) return &m;
  return nullptr;
}

const PlannedMember& member(const MergePlan& plan, const std::string& path) {
  const PlannedMember* m = find_member(plan, path);
  REQUIRE_MESSAGE(m, "no member " << path);
  return *m;
}

std::vector<std::string> paths(const MergePlan& plan) {
  std::vector<std::string> out;
  for (const PlannedMember& m : plan.members) out.emplace_back(m.path);
  return out;
}

LoaderManifest manifest_in(const MergePlan& plan, const std::string& loader_path) {
  const PlannedMember& loader = member(plan, loader_path);
  CHECK_FALSE(loader.input);
  std::string why;
  auto manifest = manifest_of_loader(loader.content, why);
  REQUIRE_MESSAGE(manifest, why);
  auto again = LoaderManifest::parse(manifest->to_json(), why);  // the JSON form reads back the same
  REQUIRE_MESSAGE(again, why);
  CHECK(again->to_json() == manifest->to_json());
  CHECK(render_loader(*manifest) == loader.content);  // what the planner writes is what is read
  return *manifest;
}

size_t entry_of(const Wheel& w, const std::string& path) {
  auto at = w.position(path);
  REQUIRE_MESSAGE(at.has_value(), "no file " << path << " in " << w.display);
  return w.files[*at].entry;
}

// A build of "demo" with a package holding one extension module that differs per build and a
// few shared files, added in a different order per build so that member indices differ.
ModelBuilder demo_package(const std::string& label, const std::string& version = "1.0") {
  ModelBuilder b = ModelBuilder::demo(label, version);
  if (label == "cu12") b.file("pkg/util.py", "def f(): pass\n");
  b.file("pkg/__init__.py", kInit);
  b.elf(kCore, "core built for " + label);
  if (label != "cu12") b.file("pkg/util.py", "def f(): pass\n");
  return b;
}

}  // namespace

TEST_CASE("plan: shared files are stored once, copied from the first build in label order") {
  Wheel cu13 = demo_package("cu13").file("pkg/tool.sh", "#!/bin/sh\n", /*executable=*/true).done();
  Wheel cu12 = demo_package("cu12").file("pkg/tool.sh", "#!/bin/sh\n").done();
  // No archive is open and the paths name no file: planning reads nothing but the models.
  REQUIRE_FALSE(cu12.zip.file);
  const std::vector<Wheel> inputs{cu13, cu12};  // cu12 is input 1 but build 0
  MergePlan plan = plan_ok(inputs);

  CHECK(label_strings(plan.labels) == std::vector<std::string>{"cu12", "cu13"});
  CHECK(plan.shared_files == 3);  // __init__.py (replaced by its patched text), util.py, tool.sh
  const std::vector<std::string> all = paths(plan);
  for (const std::string& path : {std::string("pkg/util.py"), std::string("pkg/tool.sh")}) {
    CAPTURE(path);
    CHECK(std::count(all.begin(), all.end(), path) == 1);
    const PlannedMember& m = member(plan, path);
    REQUIRE(m.input);
    CHECK(*m.input == 1);
    CHECK(m.entry == entry_of(cu12, path));
    if (path == "pkg/util.py") CHECK(m.entry != entry_of(cu13, path));  // added in another order there
    CHECK(m.content.empty());
    CHECK(m.sha256 == cu12.files[*cu12.position(path)].sha256);
    CHECK(m.size == cu12.files[*cu12.position(path)].size);
  }
  CHECK_FALSE(member(plan, "pkg/util.py").executable);
  CHECK(member(plan, "pkg/tool.sh").executable);  // executable in cu13 only
  CHECK(plan.filename == "demo-1.0-cp312-cp312-linux_x86_64.whl");
  CHECK(plan.dist_info == "demo-1.0.dist-info");
  CHECK(plan.tags == std::vector<std::string>{"cp312-cp312-linux_x86_64"});
  CHECK(plan.warnings.empty());
}

TEST_CASE("plan: variant extension modules get labelled names and a loader with its manifest") {
  const std::vector<Wheel> inputs{demo_package("cu12").done(), demo_package("cu13").done()};
  MergeOptions options;
  options.driver_fallback = true;
  options.build_info["cu12"_label] = {{"cuda", "12.8"}, {"built-by", "ci"}};
  MergePlan plan = plan_ok(inputs, options);

  const std::string stored12 = "pkg/_core.cu12.cpython-312-x86_64-linux-gnu.so";
  const std::string stored13 = "pkg/_core.cu13.cpython-312-x86_64-linux-gnu.so";
  CHECK(labelled_path(kCore, "cu12"_label) == stored12);
  REQUIRE(plan.variant_files.size() == 2);
  CHECK(plan.variant_files[0].label == "cu12"_label);
  CHECK(plan.variant_files[0].original == kCore);
  CHECK(plan.variant_files[0].stored == stored12);
  CHECK(plan.variant_files[1].label == "cu13"_label);
  CHECK(plan.variant_files[1].original == kCore);
  CHECK(plan.variant_files[1].stored == stored13);
  CHECK(find_member(plan, kCore) == nullptr);
  for (size_t i : {0, 1}) {
    const PlannedMember& m = member(plan, i == 0 ? stored12 : stored13);
    REQUIRE(m.input);
    CHECK(*m.input == i);
    CHECK(m.entry == entry_of(inputs[i], kCore));
    CHECK(m.sha256 == inputs[i].files[*inputs[i].position(kCore)].sha256);
  }
  CHECK(plan.loader_packages == std::vector<std::string>{"pkg"});

  // The package's __init__.py is replaced by its text with the loader import.
  const PlannedMember& init = member(plan, "pkg/__init__.py");
  CHECK_FALSE(init.input);
  CHECK(init.content == kPatchedInit);
  CHECK(init.content.find(kLoaderImport) != std::string::npos);
  CHECK(init.size == init.content.size());
  CHECK(init.sha256 == hash_of(init.content));
  const std::vector<std::string> all = paths(plan);
  CHECK(std::count(all.begin(), all.end(), "pkg/__init__.py") == 1);

  const PlannedMember& loader = member(plan, "pkg/_wheelmerge.py");
  CHECK(loader.sha256 == hash_of(loader.content));
  CHECK_FALSE(loader.executable);
  LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
  CHECK(manifest.package == "pkg");
  CHECK(manifest.distribution == "demo");
  CHECK(label_strings(manifest.variants) == std::vector<std::string>{"cu12", "cu13"});
  CHECK(manifest.driver_fallback);
  CHECK(manifest.extras.empty());
  REQUIRE(manifest.builds.size() == 2);
  const BuildFiles& b12 = manifest.builds.at("cu12"_label);
  const BuildFiles& b13 = manifest.builds.at("cu13"_label);
  CHECK(b12.modules == std::map<std::string, std::string>{{"pkg._core", "_core.cu12.cpython-312-x86_64-linux-gnu.so"}});
  CHECK(b13.modules == std::map<std::string, std::string>{{"pkg._core", "_core.cu13.cpython-312-x86_64-linux-gnu.so"}});
  CHECK(b12.files == std::map<std::string, std::string>{
                         {"_core.cpython-312-x86_64-linux-gnu.so", "_core.cu12.cpython-312-x86_64-linux-gnu.so"}});
  CHECK(b13.files == std::map<std::string, std::string>{
                         {"_core.cpython-312-x86_64-linux-gnu.so", "_core.cu13.cpython-312-x86_64-linux-gnu.so"}});
  CHECK(b12.preload.empty());
  CHECK(b13.preload.empty());
  CHECK(b12.build_info == std::map<std::string, std::string>{{"built-by", "ci"}, {"cuda", "12.8"}});
  CHECK(b13.build_info.empty());
}

TEST_CASE(
    "plan: without --driver-fallback the manifest says so; builds without cuda-bindings select by runtime and driver") {
  auto with_bindings = [](const std::string& label) {
    return demo_package(label).requires_dist("cuda-bindings==" + label.substr(2) + ".*").done();
  };
  MergePlan plan = plan_ok({with_bindings("cu12"), with_bindings("cu13")});
  LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
  CHECK_FALSE(manifest.driver_fallback);
  CHECK(manifest.sources() == std::vector<std::string>{"cuda-bindings"});
  CHECK(manifest.builds.at("cu12"_label).build_info.empty());
  CHECK(manifest.extras.at("cu12"_label) == std::vector<std::string>{"cu12"});  // its cuda-bindings

  MergePlan without = plan_ok({demo_package("cu12").done(), demo_package("cu13").done()});
  LoaderManifest plain = manifest_in(without, "pkg/_wheelmerge.py");
  CHECK_FALSE(plain.cuda_bindings);
  CHECK(plain.sources() == std::vector<std::string>{"runtime", "driver"});
}

TEST_CASE("plan: the manifest carries the GPU code of each build's files by stored path, none where unreadable") {
  std::vector<Wheel> inputs{demo_package("cu12").done(), demo_package("cu13").done()};
  inputs[0].gpu_code[kCore] = GpuCodeScan{{{GpuCode::Kind::sass, 80, 0}, {GpuCode::Kind::ptx, 80, 0}}, ""};
  inputs[1].gpu_code[kCore] = GpuCodeScan{{{GpuCode::Kind::sass, 90, 'a'}}, "its .nv_fatbin section overlaps"};
  LoaderManifest manifest = manifest_in(plan_ok(inputs, MergeOptions{}), "pkg/_wheelmerge.py");
  CHECK(manifest.builds.at("cu12"_label).gpu_code ==
        std::map<std::string, std::vector<std::string>>{
            {"_core.cu12.cpython-312-x86_64-linux-gnu.so", {"sm_80", "compute_80"}}});
  CHECK(manifest.builds.at("cu13"_label).gpu_code.empty());
}

TEST_CASE("plan: the plan does not depend on the order of the inputs") {
  auto make = [](const std::string& label) {
    return demo_package(label)
        .file("pkg/data.txt", "data")
        .elf("pkg/kernels/k.cubin", "kernel for " + label)
        .file("demo-1.0.data/scripts/run", "#!/bin/sh\n", true)
        .requires_dist(label == "cu12" ? "cuda-bindings>=12,<13" : "cuda-bindings>=13,<14")
        .done();
  };
  Wheel cu12 = make("cu12"), cu13 = make("cu13");
  cu12.data_dir = cu13.data_dir = "demo-1.0.data";
  MergePlan forward = plan_ok({cu12, cu13});
  MergePlan backward = plan_ok({cu13, cu12});

  CHECK(forward.filename == backward.filename);
  CHECK(forward.dist_info == backward.dist_info);
  CHECK(forward.labels == backward.labels);
  CHECK(forward.tags == backward.tags);
  CHECK(forward.loader_packages == backward.loader_packages);
  CHECK(forward.shared_files == backward.shared_files);
  CHECK(forward.warnings == backward.warnings);
  REQUIRE(forward.variant_files.size() == backward.variant_files.size());
  for (size_t i = 0; i < forward.variant_files.size(); ++i) {
    CHECK(forward.variant_files[i].label == backward.variant_files[i].label);
    CHECK(forward.variant_files[i].original == backward.variant_files[i].original);
    CHECK(forward.variant_files[i].stored == backward.variant_files[i].stored);
  }
  REQUIRE(paths(forward) == paths(backward));
  for (size_t i = 0; i < forward.members.size(); ++i) {
    const PlannedMember &f = forward.members[i], &b = backward.members[i];
    CAPTURE(f.path);
    CHECK(f.content == b.content);
    CHECK(f.sha256 == b.sha256);
    CHECK(f.size == b.size);
    CHECK(f.executable == b.executable);
    CHECK(f.entry == b.entry);
    REQUIRE(f.input.has_value() == b.input.has_value());
    if (f.input) CHECK(*b.input == 1 - *f.input);  // the same build, at the other position
  }
  CHECK(forward.members.back().path == "demo-1.0.dist-info/RECORD");
  CHECK(forward.members.back().content == backward.members.back().content);
}

TEST_CASE("plan: labels are ordered by CUDA major, cu9 before cu12") {
  Wheel cu9 = demo_package("cu9").done();
  Wheel cu12 = demo_package("cu12").done();
  MergePlan plan = plan_ok({cu12, cu9});
  CHECK(label_strings(plan.labels) == std::vector<std::string>{"cu9", "cu12"});
  REQUIRE(plan.variant_files.size() == 2);
  CHECK(plan.variant_files[0].label == "cu9"_label);
  CHECK(plan.variant_files[1].label == "cu12"_label);
  // Shared files come from the first build in label order: cu9, input 1.
  const PlannedMember& util = member(plan, "pkg/util.py");
  REQUIRE(util.input);
  CHECK(*util.input == 1);
  CHECK(util.entry == entry_of(cu9, "pkg/util.py"));
  CHECK(label_strings(manifest_in(plan, "pkg/_wheelmerge.py").variants) == std::vector<std::string>{"cu9", "cu12"});
}

TEST_CASE("plan: an input without a label is a problem, not a build sorted before the others") {
  Wheel cu12 = demo_package("cu12").done();
  Wheel plain = ModelBuilder("demo-1.0-cp312-cp312-linux_x86_64.whl", "").file("pkg/util.py", "x").done();
  REQUIRE_FALSE(plain.label);
  for (const std::vector<Wheel>& inputs : {std::vector<Wheel>{cu12, plain}, std::vector<Wheel>{plain, cu12}}) {
    Problems problems = plan_refused(inputs);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::usage);
    CHECK(problems[0].what == "no variant label");
    CHECK(problems[0].file == plain.path);
    CHECK(problems[0].found == "none");
  }
}

TEST_CASE("plan: the manifest's selector and rules module are those of the builds' labels") {
  struct Case {
    std::string low, high;
    Selector selector;
  };
  for (const Case& c : {Case{"cu9", "cu12", Selector::cuda}, Case{"torch29_cu12", "torch210_cu12", Selector::torch},
                        Case{"x86_64_v2", "x86_64_v3", Selector::cpu}}) {
    CAPTURE(c.high);
    MergePlan plan = plan_ok({demo_package(c.high).done(), demo_package(c.low).done()});
    CHECK(label_strings(plan.labels) == std::vector<std::string>{c.low, c.high});
    const LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
    CHECK(manifest.selector == c.selector);
    CHECK(manifest.variants == plan.labels);
    CHECK(member(plan, "pkg/_wheelmerge_rules.py").content == render_rules(c.selector, "pkg"));
    CHECK(member(plan, "pkg/_core." + c.low + ".cpython-312-x86_64-linux-gnu.so").input);
  }
}

TEST_CASE("plan: a differing Python file is a conflict unless a --variant-file glob matches it") {
  auto make = [](const std::string& label) {
    return demo_package(label).file("pkg/config.py", "CUDA = '" + label + "'\n").done();
  };
  const std::vector<Wheel> inputs{make("cu12"), make("cu13")};
  Problems problems = plan_refused(inputs);
  REQUIRE(problems.size() == 1);
  const Problem& p = problems[0];
  CHECK(p.kind == ProblemKind::conflict);
  CHECK(p.member == "pkg/config.py");
  CHECK(p.file == inputs[0].display + ", " + inputs[1].display);
  CHECK(p.what == "differs between builds and is not native or GPU code (pass --variant-file to allow)");
  CHECK(p.found.find("cu12 (" + inputs[0].display + "): sha256=" + base64url_nopad(hash_of("CUDA = 'cu12'\n"))) !=
        std::string::npos);

  MergeOptions options;
  options.variant_globs = {"pkg/*.py"};
  MergePlan plan = plan_ok(inputs, options);
  CHECK(find_member(plan, "pkg/config.py") == nullptr);
  CHECK(find_member(plan, "pkg/config.cu12.py"));
  CHECK(find_member(plan, "pkg/config.cu13.py"));
  CHECK(find_member(plan, "pkg/util.py"));  // matched by the glob, but shared
  LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
  CHECK(manifest.builds.at("cu13"_label).modules.at("pkg.config") == "config.cu13.py");
  CHECK(manifest.builds.at("cu13"_label).files.at("config.py") == "config.cu13.py");
  CHECK(plan.warnings.empty());  // a module: the loader imports the build's copy
}

TEST_CASE("plan: a data file that differs per build is labelled with a warning that its path is gone") {
  const std::vector<Wheel> inputs{demo_package("cu12").file("pkg/.data/_wheel.json", "{\"cuda\": \"12.x\"}").done(),
                                  demo_package("cu13").file("pkg/.data/_wheel.json", "{\"cuda\": \"13.x\"}").done()};
  MergeOptions options;
  options.variant_globs = {"pkg/.data/_wheel.json"};
  MergePlan plan = plan_ok(inputs, options);
  CHECK(find_member(plan, "pkg/.data/_wheel.cu12.json"));
  CHECK(find_member(plan, "pkg/.data/_wheel.json") == nullptr);
  REQUIRE(plan.warnings.size() == 1);
  CHECK(plan.warnings[0] ==
        "pkg/.data/_wheel.json differs per build and is stored under labelled names; code that opens it by its "
        "path no longer finds it, only the loader's path() does");
}

TEST_CASE("plan: a file only one build has is a conflict naming the build without it") {
  const std::vector<Wheel> inputs{demo_package("cu12").file("pkg/extra.py", "x").done(), demo_package("cu13").done()};
  Problems problems = plan_refused(inputs);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].member == "pkg/extra.py");
  CHECK(problems[0].found.find("cu13 (" + inputs[1].display + "): absent") != std::string::npos);
}

TEST_CASE("plan: a differing dist-info file is a conflict; differing SBOMs are kept labelled") {
  {
    const std::vector<Wheel> inputs{demo_package("cu12").dist_file("licenses/LICENSE", "MIT").done(),
                                    demo_package("cu13").dist_file("licenses/LICENSE", "BSD").done()};
    Problems problems = plan_refused(inputs);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK(problems[0].member == "demo-1.0.dist-info/licenses/LICENSE");
    CHECK(problems[0].what == "dist-info file differs between builds");
  }
  {
    const std::vector<Wheel> inputs{
        demo_package("cu12").dist_file("sboms/demo.cdx.json", "{12}").dist_file("licenses/LICENSE", "MIT").done(),
        demo_package("cu13").dist_file("sboms/demo.cdx.json", "{13}").dist_file("licenses/LICENSE", "MIT").done()};
    MergePlan plan = plan_ok(inputs);
    CHECK(find_member(plan, "demo-1.0.dist-info/sboms/demo.cdx.json") == nullptr);
    for (size_t i : {0, 1}) {
      const PlannedMember& m =
          member(plan, labelled_path("demo-1.0.dist-info/sboms/demo.cdx.json", inputs[i].build_label()));
      REQUIRE(m.input);
      CHECK(*m.input == i);
      CHECK(m.entry == entry_of(inputs[i], "demo-1.0.dist-info/sboms/demo.cdx.json"));
    }
    CHECK(find_member(plan, "demo-1.0.dist-info/sboms/demo.cu12.cdx.json"));
    const PlannedMember& license = member(plan, "demo-1.0.dist-info/licenses/LICENSE");
    REQUIRE(license.input);
    CHECK(*license.input == 0);
    // The input's own WHEEL, METADATA and RECORD are rebuilt, never copied.
    for (const PlannedMember& m : plan.members)
      if (m.path.starts_with("demo-1.0.dist-info/") && !m.path.starts_with("demo-1.0.dist-info/sboms/") &&
          m.path != "demo-1.0.dist-info/licenses/LICENSE")
        CHECK_FALSE(m.input);
  }
}

TEST_CASE("plan: builds of different versions, names, python tags or platforms are refused") {
  {
    const std::vector<Wheel> inputs{demo_package("cu12", "1.0").done(), demo_package("cu13", "1.1").done()};
    Problems problems = plan_refused(inputs);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::invalid_input);
    CHECK(problems[0].file == inputs[1].display);
    CHECK(problems[0].what == "different version (after removing the +cuNN label)");
    CHECK(problems[0].expected == "1.0 (as " + inputs[0].display + ")");
    CHECK(problems[0].found == "1.1");
  }
  {
    Wheel other =
        ModelBuilder("other-1.0-cp312-cp312-linux_x86_64.cu13.whl", "cu13").file("pkg/__init__.py", kInit).done();
    Problems problems = plan_refused({demo_package("cu12").done(), other});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::invalid_input);
    CHECK(problems[0].what == "different distribution name");
    CHECK(problems[0].found == "other");
  }
  {
    Wheel py = ModelBuilder("demo-1.0-py3-none-linux_x86_64.cu12.whl", "cu12").done();
    Wheel cp = ModelBuilder("demo-1.0-cp312-none-linux_x86_64.cu13.whl", "cu13").done();
    Problems problems = plan_refused({cp, py});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::invalid_input);
    CHECK(problems[0].file == cp.display);  // py (cu12) is the reference
    CHECK(problems[0].what == "different python tags");
    CHECK(problems[0].found == "cp312");
  }
  {
    Wheel x86 = ModelBuilder("demo-1.0-cp312-cp312-linux_x86_64.cu12.whl", "cu12").done();
    Wheel arm = ModelBuilder("demo-1.0-cp312-cp312-linux_aarch64.cu13.whl", "cu13").done();
    Problems problems = plan_refused({x86, arm});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::invalid_input);
    CHECK(problems[0].what == "different operating systems or architectures");
  }
}

TEST_CASE("plan: names that differ only in spelling, or a +cuNN local version, are one build") {
  Wheel a =
      ModelBuilder("Demo-1.0+cu12-cp312-cp312-linux_x86_64.whl", "cu12").metadata_name("Demo").file("m.py", "x").done();
  Wheel b =
      ModelBuilder("demo-1.0+cu13-cp312-cp312-linux_x86_64.whl", "cu13").metadata_name("Demo").file("m.py", "x").done();
  MergePlan plan = plan_ok({a, b});
  CHECK(plan.filename == "demo-1.0-cp312-cp312-linux_x86_64.whl");
  CHECK(plan.dist_info == "demo-1.0.dist-info");
  CHECK(member(plan, "demo-1.0.dist-info/METADATA").content.find("Version: 1.0\n") != std::string::npos);
  CHECK(plan.loader_packages.empty());
  CHECK(find_member(plan, "m.py"));
}

TEST_CASE("plan: private libraries are preloaded in dependency order, inside and outside the package") {
  auto make = [](const std::string& label) {
    return demo_package(label)
        // Outside every package; liba needs libz, which sorts after it.
        .elf("pkg.libs/liba.so.1", "a " + label, "liba.so.1", {"libz.so.1", "libc.so.6"})
        .elf("pkg.libs/libz.so.1", "z " + label, "libz.so.1")
        // Inside the package, needing liba; a "lib*.so" with a SONAME is a library, not a module.
        .elf("pkg/_libs/libin.so", "in " + label, "libin.so", {"liba.so.1"})
        .done();
  };
  MergePlan plan = plan_ok({make("cu13"), make("cu12")});
  CHECK(find_member(plan, "pkg.libs/liba.cu12.so.1"));
  CHECK(find_member(plan, "pkg.libs/libz.cu13.so.1"));
  CHECK(find_member(plan, "pkg/_libs/libin.cu12.so"));
  CHECK(plan.loader_packages == std::vector<std::string>{"pkg"});
  LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
  for (const VariantLabel& variant : {"cu12"_label, "cu13"_label}) {
    const std::string& label = variant.str();
    CAPTURE(label);
    const BuildFiles& b = manifest.builds.at(variant);
    CHECK(b.preload == std::vector<std::string>{"../pkg.libs/libz." + label + ".so.1",
                                                "../pkg.libs/liba." + label + ".so.1", "_libs/libin." + label + ".so"});
    CHECK(b.modules ==
          std::map<std::string, std::string>{{"pkg._core", "_core." + label + ".cpython-312-x86_64-linux-gnu.so"}});
    // Files the loader can find by their original name: the package's own variant files only.
    CHECK(b.files.count("_libs/libin.so") == 1);
    CHECK(b.files.at("_libs/libin.so") == "_libs/libin." + label + ".so");
    CHECK(b.files.size() == 2);
  }
  for (const std::string& p : manifest.builds.at("cu12"_label).preload) CHECK(manifest_archive_path("pkg", p) != "");
}

TEST_CASE("plan: preload_order breaks a cycle at the first library in the given order") {
  ElfInfo a{true, "liba.so", {"libb.so"}}, b{true, "libb.so", {"libc.so"}}, c{true, "libc.so", {"liba.so"}};
  ElfInfo d{true, "libd.so", {"liba.so"}};
  // No library is ready: a goes first; then c (needing only a), then b; d waits for a.
  CHECK(preload_order({&a, &b, &c}) == std::vector<size_t>{0, 2, 1});
  CHECK(preload_order({&b, &c, &a}) == std::vector<size_t>{0, 2, 1});
  // d, outside the cycle, waits for a.
  CHECK(preload_order({&a, &b, &c, &d}) == std::vector<size_t>{0, 2, 1, 3});
  // Given first, d still waits for the whole cycle it needs; the cycle breaks at its own first.
  CHECK(preload_order({&d, &a, &b, &c}) == std::vector<size_t>{1, 3, 2, 0});
  // Two cycles, the second needing the first, and a chain hanging off the second.
  ElfInfo p{true, "libp.so", {"libq.so"}}, q{true, "libq.so", {"libp.so", "libb.so"}}, r{true, "libr.so", {"libq.so"}};
  CHECK(preload_order({&r, &p, &q, &a, &b, &c}) == std::vector<size_t>{3, 5, 4, 1, 2, 0});
  // A library needing itself, or a SONAME nothing has, is ready at once.
  ElfInfo self{true, "libself.so", {"libself.so", "libmissing.so"}};
  CHECK(preload_order({&self}) == std::vector<size_t>{0});
  CHECK(preload_order({}).empty());
}

TEST_CASE("plan: a private library no package loads, or a variant outside every package, is refused") {
  {
    auto make = [](const std::string& label) {
      return ModelBuilder::demo(label).elf("demo.libs/libx.so.1", label, "libx.so.1").file("m.py", "x").done();
    };
    Problems problems = plan_refused({make("cu12"), make("cu13")});
    REQUIRE(problems.size() == 2);  // one per build
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK(problems[0].member == "demo.libs/libx.so.1");
    CHECK(problems[0].what == "private library differs between builds, but no package loads it");
  }
  {
    auto make = [](const std::string& label) { return ModelBuilder::demo(label).elf(so_name("_top"), label).done(); };
    Problems problems = plan_refused({make("cu12"), make("cu13")});
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].member == so_name("_top"));
    CHECK(problems[0].what == "variant file has no package __init__.py above it to load it from");
  }
}

TEST_CASE("plan: paths of different builds that differ only in case or normalisation are refused") {
  {
    Wheel a = demo_package("cu12").file("pkg/A.py", "x").done();
    Wheel b = demo_package("cu13").file("pkg/a.py", "x").done();
    Problems problems = plan_refused({a, b});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK((problems[0].member == "pkg/A.py" || problems[0].member == "pkg/a.py"));
    CHECK(problems[0].what == "across builds: member names differ only in case");
  }
  {
    Wheel a = demo_package("cu12").file("pkg/\xC3\xA9.py", "x").done();   // NFC
    Wheel b = demo_package("cu13").file("pkg/e\xCC\x81.py", "x").done();  // NFD
    Problems problems = plan_refused({a, b});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK(problems[0].what == "across builds: member names differ only in Unicode normalisation (NFC/NFD)");
  }
  {  // a file in one build, a directory of the same name in the other
    Wheel a = demo_package("cu12").file("pkg/data", "x").done();
    Wheel b = demo_package("cu13").file("pkg/data/x", "x").done();
    Problems problems = plan_refused({a, b});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "across builds: path is both a file and a directory");
  }
}

TEST_CASE("plan: a labelled name that another member already has is refused") {
  {
    const std::string taken = "pkg/_core.cu12.cpython-312-x86_64-linux-gnu.so";
    auto make = [&](const std::string& label) { return demo_package(label).file(taken, "shared").done(); };
    Problems problems = plan_refused({make("cu12"), make("cu13")});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK(problems[0].member == taken);
    CHECK(problems[0].what == "the labelled name of " + kCore + " is already taken");
  }
  {  // the same but for case: one file where the wheel is unpacked on macOS or Windows
    const std::string twin = "pkg/_core.CU12.cpython-312-x86_64-linux-gnu.so";
    auto make = [&](const std::string& label) { return demo_package(label).file(twin, "shared").done(); };
    Problems problems = plan_refused({make("cu12"), make("cu13")});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::conflict);
    CHECK(problems[0].what == "merged wheel: member names differ only in case");
  }
}

TEST_CASE("plan: a package under .data/platlib gets its loader there, named without the .data prefix") {
  auto make = [](const std::string& label) {
    ModelBuilder b("demo-1.0+" + label + "-cp312-cp312-linux_x86_64.whl", label);
    const std::string data = b.data_dir();  // "demo-1.0+cu12.data": the input's version
    return b.file(data + "/platlib/pkg/__init__.py", kInit)
        .elf(data + "/platlib/pkg/" + so_name("_core"), "core " + label)
        .elf(data + "/platlib/pkg/kernels/k.cubin", "kernel " + label)
        .file(data + "/scripts/run", "#!/bin/sh\n", true)
        .done();
  };
  const std::vector<Wheel> inputs{make("cu12"), make("cu13")};
  MergePlan plan = plan_ok(inputs);
  const std::string pkg = "demo-1.0.data/platlib/pkg";
  CHECK(plan.filename == "demo-1.0-cp312-cp312-linux_x86_64.whl");
  CHECK(plan.loader_packages == std::vector<std::string>{pkg});
  CHECK(member(plan, pkg + "/__init__.py").content == kPatchedInit);
  const PlannedMember& run = member(plan, "demo-1.0.data/scripts/run");
  REQUIRE(run.input);
  CHECK(*run.input == 0);
  CHECK(run.entry == entry_of(inputs[0], "demo-1.0+cu12.data/scripts/run"));
  CHECK(run.executable);
  const PlannedMember& core = member(plan, pkg + "/_core.cu13.cpython-312-x86_64-linux-gnu.so");
  REQUIRE(core.input);
  CHECK(*core.input == 1);
  CHECK(core.entry == entry_of(inputs[1], "demo-1.0+cu13.data/platlib/pkg/" + so_name("_core")));
  for (const std::string& p : paths(plan)) CHECK_FALSE(p.starts_with("demo-1.0+"));
  LoaderManifest manifest = manifest_in(plan, pkg + "/_wheelmerge.py");
  CHECK(manifest.package == "pkg");
  CHECK(manifest.builds.at("cu12"_label).modules ==
        std::map<std::string, std::string>{{"pkg._core", "_core.cu12.cpython-312-x86_64-linux-gnu.so"}});
  CHECK(manifest.builds.at("cu12"_label).files.at("kernels/k.cubin") == "kernels/k.cu12.cubin");
  REQUIRE(plan.variant_files.size() == 4);
  CHECK(plan.variant_files[0].original == pkg + "/_core.cpython-312-x86_64-linux-gnu.so");
}

TEST_CASE("plan: a subpackage whose __init__ is a variant extension module is mapped to the subpackage") {
  auto make = [](const std::string& label) {
    return demo_package(label)
        .elf("pkg/sub/" + so_name("__init__"), "sub " + label)
        .file("pkg/sub2/__init__.py", "")
        .elf("pkg/sub2/" + so_name("_k"), "k " + label)
        .done();
  };
  MergePlan plan = plan_ok({make("cu12"), make("cu13")});
  CHECK(plan.loader_packages == std::vector<std::string>{"pkg"});  // the outermost package only
  CHECK(find_member(plan, "pkg/sub/_wheelmerge.py") == nullptr);
  CHECK(find_member(plan, "pkg/sub2/_wheelmerge.py") == nullptr);
  CHECK(member(plan, "pkg/sub2/__init__.py").input);  // not patched
  LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
  CHECK(manifest.builds.at("cu13"_label).modules ==
        std::map<std::string, std::string>{{"pkg._core", "_core.cu13.cpython-312-x86_64-linux-gnu.so"},
                                           {"pkg.sub", "sub/__init__.cu13.cpython-312-x86_64-linux-gnu.so"},
                                           {"pkg.sub2._k", "sub2/_k.cu13.cpython-312-x86_64-linux-gnu.so"}});
}

TEST_CASE("plan: a module of the loader's name already in the package is refused") {
  for (const std::string& shadow :
       std::vector<std::string>{"pkg/_wheelmerge.py", "pkg/" + so_name("_wheelmerge"), "pkg/_wheelmerge/__init__.py",
                                "pkg/__pycache__/_wheelmerge.cpython-312.pyc", "pkg/_wheelmerge_rules.pyc",
                                "pkg/_wheelmerge_rules/x.py", "pkg/__pycache__/_wheelmerge_rules.cpython-312.pyc"}) {
    CAPTURE(shadow);
    auto make = [&](const std::string& label) { return demo_package(label).file(shadow, "mine").done(); };
    const std::vector<Wheel> inputs{make("cu12"), make("cu13")};
    Problems problems = plan_refused(inputs);
    const Problem* p = problem_about(problems, shadow);
    REQUIRE_MESSAGE(p, all_problems(problems));
    CHECK(p->kind == ProblemKind::conflict);
    const std::string stem = shadow.find("_rules") != std::string::npos ? "_wheelmerge_rules" : "_wheelmerge";
    CHECK(p->what == "a file Python could import as " + stem + ", the name of the module wheelmerge writes");
    CHECK(p->file == inputs[0].display + ", " + inputs[1].display);  // the inputs holding it
  }
  // Names that only start like it are no shadow.
  auto make = [&](const std::string& label) {
    return demo_package(label).file("pkg/_wheelmerge_extra.py", "x").file("pkg/_wheelmerge-data", "x").done();
  };
  MergePlan plan = plan_ok({make("cu12"), make("cu13")});
  CHECK(find_member(plan, "pkg/_wheelmerge.py"));
}

TEST_CASE("plan: an __init__.py the loader import cannot go into is refused") {
  auto make = [](const std::string& label) {
    return ModelBuilder::demo(label).file("pkg/__init__.py", "\"a\" \"b\" + x\n").elf(kCore, label).done();
  };
  const std::vector<Wheel> inputs{make("cu13"), make("cu12")};
  Problems problems = plan_refused(inputs);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].file == inputs[1].display);  // the first build in label order
  CHECK(problems[0].member == "pkg/__init__.py");
  CHECK(problems[0].what == "cannot place the loader import");
  CHECK_FALSE(problems[0].found.empty());
}

TEST_CASE("plan: a package __init__.py too large to have been read is refused") {
  auto make = [](const std::string& label) {
    return ModelBuilder::demo(label).large_init("pkg/__init__.py").elf(kCore, label).done();
  };
  const std::vector<Wheel> inputs{make("cu12"), make("cu13")};
  Problems problems = plan_refused(inputs);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].file == inputs[0].display);
  CHECK(problems[0].member == "pkg/__init__.py");
  CHECK(problems[0].what == "member too large");
  CHECK(problems[0].found == std::to_string(kMaxInitSources + 1) + " bytes");
}

TEST_CASE("plan: RECORD comes last with one row per member, and WHEEL is generated") {
  MergePlan plan = plan_ok({demo_package("cu12").done(), demo_package("cu13").done()});
  REQUIRE(plan.members.size() >= 2);
  const PlannedMember& record = plan.members.back();
  CHECK(record.path == "demo-1.0.dist-info/RECORD");
  CHECK_FALSE(record.input);
  CHECK_FALSE(record.sha256.has_value());
  CHECK(record.size == record.content.size());
  std::string expected;
  for (size_t i = 0; i + 1 < plan.members.size(); ++i) {
    const PlannedMember& m = plan.members[i];
    CHECK(m.sha256.has_value());
    expected += std::string(m.path) + ",sha256=" + base64url_nopad(*m.sha256) + "," + std::to_string(m.size) + "\n";
    if (!m.input) {
      CHECK(m.sha256 == hash_of(m.content));
      CHECK(m.size == m.content.size());
    }
  }
  expected += "demo-1.0.dist-info/RECORD,,\n";
  CHECK(record.content == expected);

  // The payload sorted by path, then the dist-info sorted, then RECORD.
  CHECK(paths(plan) == std::vector<std::string>{"pkg/__init__.py", "pkg/_core.cu12.cpython-312-x86_64-linux-gnu.so",
                                                "pkg/_core.cu13.cpython-312-x86_64-linux-gnu.so", "pkg/_wheelmerge.py",
                                                "pkg/_wheelmerge_rules.py", "pkg/util.py",
                                                "demo-1.0.dist-info/METADATA", "demo-1.0.dist-info/WHEEL",
                                                "demo-1.0.dist-info/RECORD"});

  CHECK(member(plan, "demo-1.0.dist-info/WHEEL").content ==
        "Wheel-Version: 1.0\nGenerator: wheelmerge " + std::string(kVersion) +
            "\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n");
  CHECK(member(plan, "demo-1.0.dist-info/METADATA").content == "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n");
}

TEST_CASE("plan: WHEEL carries every tag and the build tag") {
  auto make = [](const std::string& label, const std::string& platforms) {
    return ModelBuilder("demo-1.0-7-cp312.cp313-abi3-" + platforms + "." + label + ".whl", label)
        .file("m.py", "x")
        .done();
  };
  MergePlan plan = plan_ok({make("cu12", "manylinux_2_17_x86_64"), make("cu13", "manylinux_2_28_x86_64")});
  CHECK(plan.filename == "demo-1.0-7-cp312.cp313-abi3-manylinux_2_28_x86_64.whl");
  CHECK(plan.tags == std::vector<std::string>{"cp312-abi3-manylinux_2_28_x86_64", "cp313-abi3-manylinux_2_28_x86_64"});
  CHECK(member(plan, "demo-1.0.dist-info/WHEEL").content ==
        "Wheel-Version: 1.0\nGenerator: wheelmerge " + std::string(kVersion) +
            "\nRoot-Is-Purelib: false\nTag: cp312-abi3-manylinux_2_28_x86_64\nTag: cp313-abi3-manylinux_2_28_x86_64\n"
            "Build: 7\n");
}

TEST_CASE("plan: METADATA is merged, differing requirements becoming label extras the manifest lists") {
  auto make = [](const std::string& label, const std::string& bindings) {
    return demo_package(label, "1.0+" + label).requires_dist("numpy").requires_dist(bindings).done();
  };
  // "1.0+cu12" names its dist-info "demo-1.0+cu12.dist-info"; the label comes from the suffix.
  Wheel cu12 = make("cu12", "cuda-bindings>=12,<13");
  Wheel cu13 = make("cu13", "cuda-bindings>=13,<14");
  cu12.warnings = {"cu12 warning"};
  cu13.warnings = {"cu13 warning"};
  MergePlan plan = plan_ok({cu13, cu12});
  CHECK(plan.filename == "demo-1.0-cp312-cp312-linux_x86_64.whl");
  CHECK(member(plan, "demo-1.0.dist-info/METADATA").content ==
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
        "Provides-Extra: cu12\nProvides-Extra: cu13\n"
        "Requires-Dist: numpy\n"
        "Requires-Dist: cuda-bindings>=12,<13; extra == \"cu12\"\n"
        "Requires-Dist: cuda-bindings>=13,<14; extra == \"cu13\"\n");
  const LoaderManifest manifest = manifest_in(plan, "pkg/_wheelmerge.py");
  CHECK(manifest.extras.size() == 2);
  CHECK(manifest.extras.at("cu12"_label) == std::vector<std::string>{"cu12"});
  CHECK(manifest.extras.at("cu13"_label) == std::vector<std::string>{"cu13"});
  CHECK(plan.warnings == std::vector<std::string>{"cu12 warning", "cu13 warning"});  // in label order
}

TEST_CASE("plan: METADATA fields other than Version and Requires-Dist must agree") {
  Wheel a = demo_package("cu12").metadata_line("Summary: one").done();
  Wheel b = demo_package("cu13").metadata_line("Summary: two").done();
  Problems problems = plan_refused({a, b});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].what == "METADATA field Summary differs between builds");
}

TEST_CASE("plan: a labelled SBOM that meets another SBOM's name is refused") {
  const std::vector<Wheel> inputs{
      demo_package("cu12").dist_file("sboms/a.json", "{12}").dist_file("sboms/a.cu12.json", "{}").done(),
      demo_package("cu13").dist_file("sboms/a.json", "{13}").dist_file("sboms/a.cu12.json", "{}").done()};
  Problems problems = plan_refused(inputs);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].member == "demo-1.0.dist-info/sboms/a.cu12.json");
  CHECK(problems[0].what == "merged wheel: duplicate member name");
}

TEST_CASE("plan: members that install onto one path from the root and from .data/platlib are refused") {
  auto make = [](const std::string& label, const std::string& root_file) {
    ModelBuilder b("demo-1.0-cp312-cp312-linux_x86_64." + label + ".whl", label);
    const std::string data = b.data_dir();
    return b.file(data + "/platlib/pkg/__init__.py", kInit)
        .elf(data + "/platlib/pkg/" + so_name("_core"), "core " + label)
        .file(root_file, "shared")
        .done();
  };
  // A labelled variant under .data/platlib lands on a root file of that name...
  const std::string labelled = "pkg/_core.cu12.cpython-312-x86_64-linux-gnu.so";
  Problems problems = plan_refused({make("cu12", labelled), make("cu13", labelled)});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "merged wheel: installs onto the same path as another member");
  CHECK(problems[0].member == labelled);
  CHECK(problems[0].found == "another member, demo-1.0.data/platlib/" + labelled);
  // ...and the loader generated there, on a root module of the loader's name.
  problems = plan_refused({make("cu12", "pkg/_wheelmerge.py"), make("cu13", "pkg/_wheelmerge.py")});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "merged wheel: installs onto the same path as another member");
  // ...and a file under .data/purelib on the merged wheel's own METADATA.
  problems = plan_refused({make("cu12", "demo-1.0.data/purelib/demo-1.0.dist-info/METADATA"),
                           make("cu13", "demo-1.0.data/purelib/demo-1.0.dist-info/METADATA")});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].member == "demo-1.0.dist-info/METADATA");
  CHECK(problems[0].found == "another member, demo-1.0.data/purelib/demo-1.0.dist-info/METADATA");
}

TEST_CASE("plan: preload paths of a .data/platlib package are relative to where it installs") {
  auto make = [](const std::string& label) {
    ModelBuilder b("demo-1.0-cp312-cp312-linux_x86_64." + label + ".whl", label);
    const std::string data = b.data_dir();
    return b.file(data + "/platlib/pkg/__init__.py", kInit)
        .elf(data + "/platlib/pkg/" + so_name("_core"), "core " + label, {}, {"liby.so.1"})
        .elf("pkg.libs/libx.so.1", "x " + label, "libx.so.1")
        .elf(data + "/platlib/pkg.libs/liby.so.1", "y " + label, "liby.so.1", {"libx.so.1"})
        .done();
  };
  MergePlan plan = plan_ok({make("cu12"), make("cu13")});
  const std::string loader = "demo-1.0.data/platlib/pkg/_wheelmerge.py";
  LoaderManifest manifest = manifest_in(plan, loader);
  // Both libraries install into site-packages/pkg.libs, beside site-packages/pkg.
  CHECK(manifest.builds.at("cu12"_label).preload ==
        std::vector<std::string>{"../pkg.libs/libx.cu12.so.1", "../pkg.libs/liby.cu12.so.1"});
  // verify resolves them the same way, to the members that hold them.
  std::set<std::string> members;
  for (const PlannedMember& m : plan.members) members.emplace(m.path);
  std::vector<LoaderFiles> loaders{
      {loader, std::string(member(plan, loader).content),
       std::string(member(plan, "demo-1.0.data/platlib/pkg/__init__.py").content),
       std::string(member(plan, "demo-1.0.data/platlib/pkg/_wheelmerge_rules.py").content)}};
  Problems problems;
  check_loaders("demo.whl", loaders, members, problems);
  CHECK_MESSAGE(problems.empty(), (problems.empty() ? std::string() : problems.front().what));
}

TEST_CASE("plan: builds that differ in no file outside the dist-info merge with a warning") {
  auto make = [](const std::string& label) {
    return ModelBuilder::demo(label).file("pkg/__init__.py", kInit).file("pkg/util.py", "x").done();
  };
  MergePlan plan = plan_ok({make("cu12"), make("cu13")});
  CHECK(plan.loader_packages.empty());
  REQUIRE(plan.warnings.size() == 1);
  CHECK(plan.warnings[0].ends_with(
      "no file outside the dist-info differs between the builds, so the merged wheel has no loader"));
}

namespace {
// A build of CuPy-like "NAME" (e.g. cupy_cuda12x): one extension module that differs per build,
// and a data directory under .data named with the distribution.
Wheel per_cuda_distribution(const std::string& name, const std::string& label) {
  ModelBuilder b(name + "-14.2.0-cp312-cp312-linux_x86_64.whl", label);
  b.metadata_name(name).file("cupy/__init__.py", kInit).elf(so_name("cupy/_core"), "built for " + label);
  b.file(b.data_dir() + "/scripts/cupy-info", "#!/bin/sh\n");
  return b.done();
}
}  // namespace

TEST_CASE("plan: --name merges distributions of different names under the given name") {
  MergeOptions options;
  options.name = "cupy";
  MergePlan plan =
      plan_ok({per_cuda_distribution("cupy_cuda13x", "cu13"), per_cuda_distribution("cupy_cuda12x", "cu12")}, options);
  CHECK(plan.filename == "cupy-14.2.0-cp312-cp312-linux_x86_64.whl");
  CHECK(plan.dist_info == "cupy-14.2.0.dist-info");
  CHECK(label_strings(plan.labels) == std::vector<std::string>{"cu12", "cu13"});
  for (const std::string& path : paths(plan)) {
    CAPTURE(path);
    CHECK(path.find("cuda1") == std::string::npos);
  }
  CHECK(find_member(plan, "cupy-14.2.0.data/scripts/cupy-info"));
  CHECK(member(plan, "cupy-14.2.0.dist-info/METADATA").content.find("\nName: cupy\n") != std::string::npos);
  CHECK(member(plan, "cupy-14.2.0.dist-info/RECORD").content.find("cupy-14.2.0.dist-info/METADATA,sha256=") !=
        std::string::npos);
  CHECK(manifest_in(plan, "cupy/_wheelmerge.py").distribution == "cupy");
}

TEST_CASE("plan: --name still needs one project, and labels that agree with the names") {
  MergeOptions options;
  options.name = "cupy";
  {
    Problems problems = plan_refused(
        {per_cuda_distribution("cupy_cuda12x", "cu12"), per_cuda_distribution("cupx_cuda13x", "cu13")}, options);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "different distribution name without its CUDA suffix");
    CHECK(problems[0].expected == "cupy (as cupy_cuda12x-14.2.0-cp312-cp312-linux_x86_64.whl)");
    CHECK(problems[0].found == "cupx");
  }
  {
    Problems problems = plan_refused(
        {per_cuda_distribution("cupy_cuda12x", "cu13"), per_cuda_distribution("cupy_cuda13x", "cu12")}, options);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].what == "variant label contradicts the CUDA major of the name");
    CHECK(problems[0].expected == "cu13 (from the name cupy_cuda13x)");
    CHECK(problems[0].found == "cu12");
  }
  {
    // Without --name, different names stay an error that says how to merge them.
    Problems problems =
        plan_refused({per_cuda_distribution("cupy_cuda12x", "cu12"), per_cuda_distribution("cupy_cuda13x", "cu13")});
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].what == "different distribution name");
    CHECK(problems[0].expected.find("--name NAME") != std::string::npos);
  }
}

TEST_CASE("plan: with loaders, a shared file named like a variant file is refused; without, it is kept") {
  // demo_package has a native extension per build, so the merge has a loader.
  Problems problems = plan_refused({demo_package("cu12").file("pkg/notes.cu12.txt", "same").done(),
                                    demo_package("cu13").file("pkg/notes.cu12.txt", "same").done()});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].member == "pkg/notes.cu12.txt");
  CHECK(problems[0].what == "a file of every build is named like a variant file");
  CHECK(problems[0].found.starts_with("the label cu12 "));
  // A label that is not one of the merge's is only a name.
  Problems none;
  CHECK(plan_merge(std::vector<Wheel>{demo_package("cu12").file("pkg/notes.cu11.txt", "same").done(),
                                      demo_package("cu13").file("pkg/notes.cu11.txt", "same").done()},
                   {}, none));
  CHECK(none.empty());
}

TEST_CASE("plan: a DLL that differs between builds is a conflict, as Windows would not find a labelled copy") {
  Problems problems;
  CHECK_FALSE(plan_merge(std::vector<Wheel>{demo_package("cu12").file("pkg/helper.DLL", "twelve").done(),
                                            demo_package("cu13").file("pkg/helper.DLL", "thirteen").done()},
                         {}, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::conflict);
  CHECK(problems[0].member == "pkg/helper.DLL");
  CHECK(problems[0].what.find("a DLL that differs between builds") == 0);
  // A DLL of one build alone (delvewheel's hash-named copies) keeps its name: no build has another.
  Problems own;
  auto plan = plan_merge(std::vector<Wheel>{demo_package("cu12").file("pkg.libs/msvcp140-1a2b.dll", "twelve").done(),
                                            demo_package("cu13").file("pkg.libs/msvcp140-3c4d.dll", "thirteen").done()},
                         {}, own);
  REQUIRE_MESSAGE(plan, all_problems(own));
  std::vector<std::string> stored;
  for (const VariantFile& v : plan->variant_files)
    if (v.original.ends_with(".dll")) stored.push_back(v.label.str() + " " + v.stored);
  CHECK(stored == std::vector<std::string>{"cu12 pkg.libs/msvcp140-1a2b.dll", "cu13 pkg.libs/msvcp140-3c4d.dll"});
  // The same DLL in every build is shared, as any file is.
  Problems none;
  CHECK(plan_merge(std::vector<Wheel>{demo_package("cu12").file("pkg/helper.dll", "same").done(),
                                      demo_package("cu13").file("pkg/helper.dll", "same").done()},
                   {}, none));
  CHECK(none.empty());
}

TEST_CASE("plan: a PE image that differs between builds is native code, stored per build whatever its name") {
  Problems problems;
  auto plan = plan_merge(std::vector<Wheel>{demo_package("cu12").pe("pkg/kernels/helper.bin", "twelve").done(),
                                            demo_package("cu13").pe("pkg/kernels/helper.bin", "thirteen").done()},
                         {}, problems);
  REQUIRE_MESSAGE(plan, all_problems(problems));
  std::vector<std::string> stored;
  for (const VariantFile& v : plan->variant_files)
    if (v.original == "pkg/kernels/helper.bin") stored.push_back(v.stored);
  CHECK(stored == std::vector<std::string>{"pkg/kernels/helper.cu12.bin", "pkg/kernels/helper.cu13.bin"});
  // The same bytes without the PE header are data: a conflict unless --variant-file names them.
  Problems conflict;
  CHECK_FALSE(plan_merge(std::vector<Wheel>{demo_package("cu12").file("pkg/kernels/helper.bin", "twelve").done(),
                                            demo_package("cu13").file("pkg/kernels/helper.bin", "thirteen").done()},
                         {}, conflict));
  REQUIRE(conflict.size() == 1);
  CHECK(conflict[0].what.find("is not native or GPU code") != std::string::npos);
}
