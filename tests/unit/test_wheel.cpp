#include "merger/wheel.hpp"

#include "wheel_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

using namespace wm;
using namespace wm::test;

namespace {

const std::string kName = "pkg-1.0-cp311-cp311-linux_x86_64.whl";

WheelBuilder valid_wheel() {
  WheelBuilder b(kName, {
                            {"pkg/__init__.py", "\"\"\"The package.\"\"\"\nfrom .util import X\n"},
                            {"pkg/util.py", "X = 1\n"},
                            {"pkg/sub/__init__.py", ""},
                            {"pkg/sub/mod.py", "Y = 2\n"},
                            {"pkg/_core.cpython-311-x86_64-linux-gnu.so", "not really a module"},
                        });
  b.metadata_extra = {"Summary: a test package", "Requires-Dist: numpy>=1.24",
                      "Requires-Dist: scipy; python_version >= \"3.10\""};
  return b;
}

// Reads `b` written into `dir`; the problems it found in `problems`.
std::optional<Wheel> read(const WheelBuilder& b, const TempDir& dir, Problems& problems, std::string label = {}) {
  return read_wheel(WheelInput{b.write(dir.path), std::move(label)}, problems);
}

// The wheel is refused, with one or more invalid_input problems, one of them saying `what`
// about `member`.
void check_refused(const WheelBuilder& b, const std::string& member, const std::string& what) {
  TempDir dir;
  Problems problems;
  auto wheel = read(b, dir, problems);
  CHECK_FALSE(wheel);
  REQUIRE_FALSE(problems.empty());
  for (const Problem& p : problems) {
    CHECK(p.kind == ProblemKind::invalid_input);
    CHECK(p.file == b.filename);
  }
  bool found = std::any_of(problems.begin(), problems.end(),
                           [&](const Problem& p) { return p.member == member && p.what == what; });
  INFO("expected: ", member, ": ", what, "; first problem: ", describe(problems.front()));
  CHECK(found);
}

}  // namespace

TEST_CASE("wheel: the test builder's digests are RECORD's sha256 in urlsafe base64 without padding") {
  CHECK(sha256_b64("") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  CHECK(sha256_b64("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
}

TEST_CASE("wheel: a valid wheel reads with its files, index, dist-info, metadata and hashes") {
  TempDir dir;
  WheelBuilder b = valid_wheel();
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE_MESSAGE(w, (problems.empty() ? "" : describe(problems.front())));
  CHECK(problems.empty());
  CHECK(w->warnings.empty());
  CHECK(w->display == kName);
  CHECK_FALSE(w->label);
  CHECK(w->name.name == "pkg");
  CHECK(w->name.version == "1.0");
  CHECK(w->dist_info == "pkg-1.0.dist-info");
  CHECK(w->data_dir.empty());
  CHECK(w->base_version() == "1.0");

  // Every member, in archive order, RECORD included; each findable by its path.
  std::vector<std::pair<std::string, std::string>> members = b.members();
  REQUIRE(w->files.size() == members.size());
  CHECK(w->index.size() == members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& [path, bytes] = members[i];
    CAPTURE(path);
    CHECK(w->files[i].path == path);
    CHECK(w->files[i].size == bytes.size());
    CHECK(w->files[i].entry == i);
    CHECK_FALSE(bool(w->files[i].executable));
    CHECK_FALSE(bool(w->files[i].elf));
    REQUIRE(w->find(path) == &w->files[i]);
    if (path != w->dist_info + "/RECORD") CHECK(base64url_nopad(*w->files[i].sha256) == sha256_b64(bytes));
  }
  CHECK(w->find("pkg/absent.py") == nullptr);

  CHECK(w->wheel_fields.one("Wheel-Version") == "1.0");
  CHECK(w->wheel_fields.one("Root-Is-Purelib") == "false");
  CHECK(w->metadata.one("Name") == "pkg");
  CHECK(w->metadata.one("Version") == "1.0");
  CHECK(w->metadata.one("Summary") == "a test package");
  REQUIRE(w->requires_dist.size() == 2);
  CHECK(w->requires_dist[0].name == "numpy");
  CHECK(w->requires_dist[0].specifier == ">=1.24");
  CHECK_FALSE(w->requires_dist[0].marker);
  CHECK(w->requires_dist[1].name == "scipy");
  CHECK(w->requires_dist[1].marker);

  // Every __init__.py, the empty one too, and nothing else.
  CHECK(w->init_sources.size() == 2);
  CHECK(w->init_sources.at("pkg/__init__.py") == b.files.at("pkg/__init__.py"));
  CHECK(w->init_sources.at("pkg/sub/__init__.py") == "");
}

TEST_CASE("wheel: executable bits, ELF files and .data members are read into the model") {
  TempDir dir;
  const std::string libz = read_file_bytes("/usr/lib/x86_64-linux-gnu/libz.so.1");
  WheelBuilder b(kName, {{"pkg/__init__.py", ""},
                         {"pkg.libs/libz.so.1", libz},
                         {"pkg-1.0.data/scripts/tool", "#!/bin/sh\necho hi\n"},
                         {"pkg-1.0.data/purelib/extra/__init__.py", "Z = 3\n"}});
  b.executable = {"pkg-1.0.data/scripts/tool"};
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE_MESSAGE(w, (problems.empty() ? "" : describe(problems.front())));
  CHECK(w->data_dir == "pkg-1.0.data");
  REQUIRE(w->find("pkg-1.0.data/scripts/tool"));
  CHECK(bool(w->find("pkg-1.0.data/scripts/tool")->executable));
  const WheelFile* lib = w->find("pkg.libs/libz.so.1");
  REQUIRE(lib);
  CHECK(bool(lib->elf));
  REQUIRE(lib->elf_info);
  CHECK(lib->elf_info->shared_object);
  CHECK(lib->elf_info->soname == "libz.so.1");
  CHECK(base64url_nopad(*lib->sha256) == sha256_b64(libz));
  // An __init__.py under .data is kept by its path in the wheel.
  CHECK(w->init_sources.count("pkg-1.0.data/purelib/extra/__init__.py") == 1);
}

TEST_CASE("wheel: a hash that does not match RECORD is refused, naming the member") {
  WheelBuilder b = valid_wheel();
  b.record_hash["pkg/util.py"] = "sha256=" + sha256_b64("X = 2\n");
  check_refused(b, "pkg/util.py", "hash does not match RECORD");
}

TEST_CASE("wheel: a file RECORD does not list is refused, naming the member") {
  WheelBuilder b = valid_wheel();
  b.unrecorded = {"pkg/sub/mod.py"};
  check_refused(b, "pkg/sub/mod.py", "file not listed in RECORD");
}

TEST_CASE("wheel: a RECORD row for a file the archive lacks is refused, naming RECORD and the file") {
  TempDir dir;
  WheelBuilder b = valid_wheel();
  b.extra_record_rows = {"pkg/gone.py,sha256=" + sha256_b64("gone\n") + ",5"};
  Problems problems;
  CHECK_FALSE(read(b, dir, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].member == "pkg-1.0.dist-info/RECORD");
  CHECK(problems[0].what == "RECORD lists a file the archive lacks");
  CHECK(problems[0].expected == "pkg/gone.py");
}

TEST_CASE("wheel: a size that does not match RECORD is refused") {
  WheelBuilder b = valid_wheel();
  b.extra_record_rows = {};
  // The right hash with a wrong size: rewrite RECORD by hand.
  std::string record;
  for (const auto& [path, bytes] : b.members()) {
    if (path.ends_with("/RECORD")) continue;
    record +=
        path + ",sha256=" + sha256_b64(bytes) + "," + std::to_string(bytes.size() + (path == "pkg/util.py")) + "\n";
  }
  record += b.dist_info() + "/RECORD,,\n";
  for (const auto& [path, bytes] : b.members()) b.unrecorded.insert(path);
  b.extra_record_rows = {record.substr(0, record.size() - 1)};
  check_refused(b, "pkg/util.py", "size does not match RECORD");
}

TEST_CASE("wheel: METADATA's Name must match the file name") {
  WheelBuilder b = valid_wheel();
  b.metadata = "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n";
  check_refused(b, "pkg-1.0.dist-info/METADATA", "Name does not match the file name");
}

TEST_CASE("wheel: METADATA's Name may differ from the file name in case and separators") {
  TempDir dir;
  WheelBuilder b("my_pkg-1.0-cp311-cp311-linux_x86_64.whl", {{"my_pkg/__init__.py", ""}});
  b.metadata = "Metadata-Version: 2.1\nName: My.Pkg\nVersion: 1.0\n";
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE_MESSAGE(w, (problems.empty() ? "" : describe(problems.front())));
  CHECK(w->metadata.one("Name") == "My.Pkg");
}

TEST_CASE("wheel: METADATA's Version must match the file name") {
  WheelBuilder b = valid_wheel();
  b.metadata = "Metadata-Version: 2.1\nName: pkg\nVersion: 1.1\n";
  check_refused(b, "pkg-1.0.dist-info/METADATA", "Version does not match the file name");
}

TEST_CASE("wheel: two .dist-info directories are refused") {
  TempDir dir;
  WheelBuilder b = valid_wheel();
  b.files["other-2.0.dist-info/METADATA"] = "Metadata-Version: 2.1\nName: other\nVersion: 2.0\n";
  Problems problems;
  CHECK_FALSE(read(b, dir, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].what == "wrong number of .dist-info directories");
  CHECK(problems[0].found.find("other-2.0.dist-info") != std::string::npos);
  CHECK(problems[0].found.find("pkg-1.0.dist-info") != std::string::npos);
}

TEST_CASE("wheel: a byte order mark in METADATA is refused") {
  WheelBuilder b = valid_wheel();
  b.metadata = "\xEF\xBB\xBFMetadata-Version: 2.1\nName: pkg\nVersion: 1.0\n";
  check_refused(b, "pkg-1.0.dist-info/METADATA", "METADATA starts with a byte order mark");
}

TEST_CASE("wheel: an unknown .data key is refused, naming the member") {
  WheelBuilder b = valid_wheel();
  b.files["pkg-1.0.data/stuff/x.txt"] = "x";
  check_refused(b, "pkg-1.0.data/stuff/x.txt", "unknown .data directory key");
}

TEST_CASE("wheel: a .data/purelib file installing onto the wheel's own dist-info is refused") {
  WheelBuilder b = valid_wheel();
  b.files["pkg-1.0.data/purelib/pkg-1.0.dist-info/METADATA"] = "Name: other\n";
  check_refused(b, "pkg-1.0.dist-info/METADATA", "installs onto the same path as another member");
}

TEST_CASE("wheel: a file an installer writes is refused inside a wheel") {
  for (const char* name : {"INSTALLER", "REQUESTED", "direct_url.json"}) {
    CAPTURE(name);
    WheelBuilder b = valid_wheel();
    b.files[std::string("pkg-1.0.dist-info/") + name] = "pip\n";
    check_refused(b, std::string("pkg-1.0.dist-info/") + name, "installer-written file inside the wheel");
  }
}

TEST_CASE("wheel: a WHEEL without Wheel-Version 1.x is refused") {
  WheelBuilder no_wheel = valid_wheel();
  no_wheel.wheel = "";  // present but empty: no Wheel-Version
  check_refused(no_wheel, "pkg-1.0.dist-info/WHEEL", "unsupported Wheel-Version");

  WheelBuilder v2 = valid_wheel();
  v2.wheel = "Wheel-Version: 2.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n";
  check_refused(v2, "pkg-1.0.dist-info/WHEEL", "unsupported Wheel-Version");
}

TEST_CASE("wheel: Tag lines other than the file name's are a warning, not a refusal") {
  TempDir dir;
  WheelBuilder b = valid_wheel();
  b.wheel = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_aarch64\n";
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE(w);
  CHECK(problems.empty());
  REQUIRE(w->warnings.size() == 1);
  CHECK(w->warnings[0].find("Tag lines") != std::string::npos);
}

TEST_CASE("wheel: a name that is no wheel file name is refused before the archive is read") {
  TempDir dir;
  Problems problems;
  CHECK_FALSE(read_wheel(WheelInput{(dir.path / "pkg.whl").string(), {}}, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].what == "not a wheel file name");
}

TEST_CASE("wheel: the label comes from PATH=LABEL, a .cuNN suffix, a +cuNN local version, or nowhere") {
  // The label detected, as its text; "" for none.
  auto detected = [](const WheelInput& input) {
    auto found = detect_label(input);
    if (!found) return std::string();
    REQUIRE(found->label);
    CHECK(found->label->str() == found->text);
    return found->text;
  };
  CHECK(detected({"dist/pkg-1.0-cp311-cp311-linux_x86_64.whl", "cu12"}) == "cu12");
  // The explicit label comes first (read_inputs refuses an input whose sources disagree).
  CHECK(detected({"dist/pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl", "cu13"}) == "cu13");
  CHECK(detected({"dist/pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl", ""}) == "cu12");
  CHECK(detected({"/a/b.c/pkg-1.0+cu13-cp311-cp311-linux_x86_64.whl", ""}) == "cu13");
  CHECK(detected({"pkg-1.0+cu13-1-cp311-cp311-linux_x86_64.whl", ""}) == "cu13");  // with a build tag
  CHECK(detected({"pkg-1.0+torch210.cu12-cp311-cp311-linux_x86_64.whl", ""}) == "torch210_cu12");
  CHECK(detected({"pkg-1.0-cp311-cp311-linux_x86_64.whl", ""}).empty());
  CHECK(detected({"pkg-1.0+cpu-cp311-cp311-linux_x86_64.whl", ""}).empty());
  CHECK(detected({"pkg-1.0-cp311-cp311-linux_x86_64.cuda.whl", ""}).empty());
  CHECK(detected({"pkg-1.0-cp311-cp311-linux_x86_64.cu012.whl", ""}).empty());
  CHECK(detected({"pkg-1.0.tar.gz", ""}).empty());
}

TEST_CASE("wheel: a PATH=LABEL that is no label is kept as given, with why, and no label") {
  auto found = detect_label({"dist/pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl", "cu1x"});
  REQUIRE(found);
  CHECK(found->form == "PATH=LABEL");
  CHECK(found->text == "cu1x");
  CHECK_FALSE(found->label);
  CHECK(found->why == "cu followed by the CUDA major");
  // A suffix or local version that is no label is no source at all.
  CHECK(label_sources({"pkg-1.0+cu1x-cp311-cp311-linux_x86_64.cu1x.whl", ""}).empty());
}

TEST_CASE("wheel: label_sources lists every place an input names a label, in order") {
  auto forms = [](const WheelInput& input) {
    std::vector<std::string> out;
    for (const LabelSource& s : label_sources(input)) out.push_back(std::string(s.form) + ":" + s.text);
    return out;
  };
  CHECK(forms({"pkg-1.0+cu12-cp311-cp311-linux_x86_64.cu13.whl", "cu14"}) ==
        std::vector<std::string>{"PATH=LABEL:cu14", ".LABEL suffix:cu13", "+LABEL local version:cu12"});
  CHECK(forms({"pkg-1.0+cu12-cp311-cp311-linux_x86_64.whl", ""}) ==
        std::vector<std::string>{"+LABEL local version:cu12"});
  CHECK(forms({"pkg-1.0-cp311-cp311-linux_x86_64.whl", ""}).empty());
}

TEST_CASE("wheel: read_wheel keeps the label it detects") {
  TempDir dir;
  WheelBuilder suffix("pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl", {{"pkg/__init__.py", ""}});
  WheelBuilder local("pkg-1.0+cu13-cp311-cp311-linux_x86_64.whl", {{"pkg/__init__.py", ""}});
  Problems problems;
  auto a = read(suffix, dir, problems);
  auto b = read(local, dir, problems);
  auto c = read(suffix, dir, problems, "cu11");
  REQUIRE_MESSAGE(problems.empty(), describe(problems.front()));
  REQUIRE((a && b && c));
  CHECK(a->label == VariantLabel::cuda(12));
  CHECK(b->label == VariantLabel::cuda(13));
  CHECK(b->dist_info == "pkg-1.0+cu13.dist-info");
  CHECK(b->base_version() == "1.0");
  CHECK(c->label == VariantLabel::cuda(11));
  CHECK(&c->build_label() == &*c->label);
}

TEST_CASE("wheel: a wheel read without a label has none, and build_label says so instead of reading it") {
  TempDir dir;
  WheelBuilder plain("pkg-1.0-cp311-cp311-linux_x86_64.whl", {{"pkg/__init__.py", ""}});
  Problems problems;
  auto none = read(plain, dir, problems);
  auto invalid = read(plain, dir, problems, "cu1x");  // read_inputs refuses it; read_wheel reads the wheel
  REQUIRE_MESSAGE(problems.empty(), describe(problems.front()));
  REQUIRE((none && invalid));
  CHECK_FALSE(none->label);
  CHECK_FALSE(invalid->label);
  CHECK_THROWS_AS(none->build_label(), std::logic_error);
  // open_wheel takes the label its caller read.
  auto opened = open_wheel(plain.write(dir.path), VariantLabel::cpu(3), problems);
  REQUIRE(opened);
  CHECK(opened->wheel.build_label() == VariantLabel::cpu(3));
}

TEST_CASE("wheel: signature files are dropped with a warning") {
  TempDir dir;
  WheelBuilder b = valid_wheel();
  b.files["pkg-1.0.dist-info/RECORD.jws"] = "{}";
  b.unrecorded = {"pkg-1.0.dist-info/RECORD.jws"};
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE_MESSAGE(w, (problems.empty() ? "" : describe(problems.front())));
  CHECK_FALSE(w->find("pkg-1.0.dist-info/RECORD.jws"));
  CHECK(w->files.size() == b.members().size() - 1);
  for (size_t i = 0; i < w->files.size(); ++i) CHECK(w->position(w->files[i].path) == i);
  REQUIRE(w->warnings.size() == 1);
  CHECK(w->warnings[0].find("RECORD.jws: a signature of RECORD, not checked") != std::string::npos);
}

TEST_CASE("wheel: RECORD may use sha512, and the model still holds each file's sha256") {
  TempDir dir;
  WheelBuilder b = valid_wheel();
  const std::string& bytes = b.files.at("pkg/util.py");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha512(), nullptr) == 1);
  b.record_hash["pkg/util.py"] = "sha512=" + b64url_nopad(digest, length);
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE_MESSAGE(w, (problems.empty() ? "" : describe(problems.front())));
  CHECK(base64url_nopad(*w->find("pkg/util.py")->sha256) == sha256_b64(bytes));

  // A weak algorithm is refused.
  b.record_hash["pkg/util.py"] = "md5=1B2M2Y8AsgTpgAmY7PhCfg";
  check_refused(b, "pkg/util.py", "weak or unknown hash algorithm in RECORD");
}

TEST_CASE("wheel: opened wheels stream together, each keeping its own problems and its files' digests") {
  TempDir a_dir, b_dir, c_dir;
  WheelBuilder good = valid_wheel();
  WheelBuilder bad_sha256 = valid_wheel();
  bad_sha256.record_hash["pkg/util.py"] = "sha256=" + sha256_b64("X = 2\n");
  WheelBuilder bad_sha512 = valid_wheel();
  const std::string other = "X = 3\n";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(other.data(), other.size(), digest, &length, EVP_sha512(), nullptr) == 1);
  bad_sha512.record_hash["pkg/sub/mod.py"] = "sha512=" + b64url_nopad(digest, length);

  std::vector<OpenedWheel> opened;
  for (auto [builder, dir] :
       {std::pair(&bad_sha256, &a_dir), std::pair(&good, &b_dir), std::pair(&bad_sha512, &c_dir)}) {
    Problems problems;
    auto o = open_wheel(builder->write(dir->path), std::nullopt, problems);
    REQUIRE_MESSAGE(o, (problems.empty() ? "" : describe(problems.front())));  // RECORD's claims are not checked yet
    opened.push_back(std::move(*o));
  }
  std::vector<Problems> problems(opened.size());
  auto wheels = stream_wheels(std::move(opened), problems);
  REQUIRE(wheels.size() == 3);
  CHECK_FALSE(wheels[0]);
  REQUIRE(problems[0].size() == 1);
  CHECK(problems[0][0].member == "pkg/util.py");
  CHECK(problems[0][0].what == "hash does not match RECORD");
  CHECK(problems[0][0].expected == "sha256=" + sha256_b64("X = 2\n"));
  CHECK(problems[0][0].found == "sha256=" + sha256_b64("X = 1\n"));
  REQUIRE(wheels[1]);
  CHECK(problems[1].empty());
  // Every digest is the bytes' own (RECORD's own row has none).
  const std::map<std::string, std::string> members = [&] {
    auto list = good.members();
    return std::map<std::string, std::string>(list.begin(), list.end());
  }();
  CHECK(wheels[1]->files.size() == members.size());
  for (const WheelFile& f : wheels[1]->files)
    if (f.path != "pkg-1.0.dist-info/RECORD")
      CHECK(base64url_nopad(*f.sha256) == sha256_b64(members.at(std::string(f.path))));
  CHECK_FALSE(wheels[2]);
  REQUIRE(problems[2].size() == 1);
  CHECK(problems[2][0].member == "pkg/sub/mod.py");
  CHECK(problems[2][0].expected.starts_with("sha512=" + b64url_nopad(digest, length)));
}

TEST_CASE("wheel: PE/COFF images are recognised by their MZ header pointing at a PE signature") {
  // A DOS header whose e_lfanew (at 0x3C) points at "PE\0\0", then a COFF header for AMD64.
  std::string image(0x80, '\0');
  image[0] = 'M';
  image[1] = 'Z';
  image[0x3C] = 0x40;
  image.replace(0x40, 6, std::string("PE\0\0\x64\x86", 6));
  std::string bad_offset = image;
  bad_offset[0x3C] = 0x7F;  // past the signature
  std::string not_mz = image;
  not_mz[0] = 'X';
  TempDir dir;
  WheelBuilder b(kName, {{"pkg/__init__.py", ""},
                         {"pkg/_core.pyd", image},
                         {"pkg/odd.bin", image},
                         {"pkg/bad.pyd", bad_offset},
                         {"pkg/text.txt", not_mz}});
  Problems problems;
  auto w = read(b, dir, problems);
  REQUIRE_MESSAGE(w, (problems.empty() ? "" : describe(problems.front())));
  CHECK(bool(w->find("pkg/_core.pyd")->pe));
  CHECK(bool(w->find("pkg/odd.bin")->pe));
  CHECK_FALSE(bool(w->find("pkg/bad.pyd")->pe));
  CHECK_FALSE(bool(w->find("pkg/text.txt")->pe));
  CHECK_FALSE(bool(w->find("pkg/_core.pyd")->elf));
}
