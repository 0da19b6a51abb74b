// Test helpers: a temporary directory removed at the end of the test, and a builder that writes
// a valid wheel file from a map of member path -> bytes. RECORD is computed here, independently
// of the engine's own digest code (OpenSSL's SHA-256 and a base64 written below), so a test
// does not check the engine against itself; WHEEL and METADATA have defaults taken from the file
// name and can be replaced, and RECORD can be made wrong on purpose.
#pragma once

#include "merger/base/bytes.hpp"
#include "merger/zip/file.hpp"
#include "merger/zip/member_stream.hpp"
#include "merger/zip/zip_writer.hpp"

#include <doctest/doctest.h>
#include <openssl/evp.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <algorithm>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wm::test {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary directory, removed with everything in it
// when the object goes.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "wm_unit_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // A subdirectory, created.
  fs::path sub(const std::string& name) const {
    fs::path p = path / name;
    fs::create_directories(p);
    return p;
  }
};

// The names in `dir`, sorted (empty when it does not exist).
inline std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_file_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE(out);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out);
}

// urlsafe base64 without padding (RFC 4648 section 5), as RECORD uses.
inline std::string b64url_nopad(const unsigned char* data, size_t size) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  if (size - i == 1) {
    uint32_t v = uint32_t{data[i]} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (size - i == 2) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

// A member's bytes, streamed through its CRC check (`display` names the archive in problems).
inline std::string member_content(const ZipArchive& zip, const ZipEntry& e, const std::string& display) {
  std::string out;
  auto problem = stream_member(
      zip, e,
      [&](std::span<const uint8_t> c) {
        out.append(c.begin(), c.end());
        return true;
      },
      display, [&] { out.clear(); });
  REQUIRE_FALSE(problem);
  return out;
}

// The SHA-256 digest of `bytes` in RECORD's encoding (without the "sha256=").
inline std::string sha256_b64(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) == 1);
  return b64url_nopad(digest, length);
}

// One wheel to write. Members are written payload first (in path order), then METADATA, WHEEL
// and RECORD, RECORD last; a dist-info file given in `files` (an SBOM, LICENSE, or something a
// wheel must not hold) goes with the payload.
struct WheelBuilder {
  std::string filename;                            // "pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl"
  std::map<std::string, std::string> files;        // member path -> bytes
  std::set<std::string> executable;                // members written with mode 0755
  std::optional<std::string> wheel;                // WHEEL's text; default from the file name
  std::optional<std::string> metadata;             // METADATA's text; default from the file name
  std::vector<std::string> metadata_extra;         // lines added to the default METADATA ("Requires-Dist: x")
  std::set<std::string> unrecorded;                // members RECORD leaves out
  std::map<std::string, std::string> record_hash;  // member -> the hash field RECORD gives instead
  std::vector<std::string> extra_record_rows;      // rows added to RECORD as written ("a,b,c")

  explicit WheelBuilder(std::string name, std::map<std::string, std::string> members = {})
      : filename(std::move(name)), files(std::move(members)) {}

  // The file name's parts: {name}-{version}[-{build}]-{python}-{abi}-{platform}[.label].whl
  std::vector<std::string> parts() const {
    std::string stem = filename.substr(0, filename.size() - 4);
    std::vector<std::string> out;
    size_t at = 0;
    for (size_t dash; (dash = stem.find('-', at)) != std::string::npos; at = dash + 1)
      out.push_back(stem.substr(at, dash - at));
    out.push_back(stem.substr(at));
    return out;
  }
  std::string name() const { return parts()[0]; }
  std::string version() const { return parts()[1]; }
  std::string dist_info() const { return name() + "-" + version() + ".dist-info"; }
  std::string data_dir() const { return name() + "-" + version() + ".data"; }
  std::string tag() const {
    std::vector<std::string> p = parts();
    std::string platform = p.back();
    // A ".cu12" suffix label after the platform tag is no part of the tag.
    if (size_t dot = platform.rfind('.'); dot != std::string::npos && platform.compare(dot + 1, 2, "cu") == 0)
      platform.resize(dot);
    return p[p.size() - 3] + "-" + p[p.size() - 2] + "-" + platform;
  }

  std::string default_wheel() const {
    std::string text = "Wheel-Version: 1.0\nGenerator: wheel_builder\nRoot-Is-Purelib: false\nTag: " + tag() + "\n";
    if (parts().size() == 6) text += "Build: " + parts()[2] + "\n";
    return text;
  }
  std::string default_metadata() const {
    std::string text = "Metadata-Version: 2.1\nName: " + name() + "\nVersion: " + version() + "\n";
    for (const std::string& line : metadata_extra) text += line + "\n";
    return text;
  }

  // Every member in the order written, with its bytes, RECORD included.
  std::vector<std::pair<std::string, std::string>> members() const {
    std::vector<std::pair<std::string, std::string>> out(files.begin(), files.end());
    out.emplace_back(dist_info() + "/METADATA", metadata.value_or(default_metadata()));
    out.emplace_back(dist_info() + "/WHEEL", wheel.value_or(default_wheel()));
    std::string record;
    for (const auto& [path, bytes] : out) {
      if (unrecorded.count(path)) continue;
      auto hash = record_hash.find(path);
      record += path + "," + (hash != record_hash.end() ? hash->second : "sha256=" + sha256_b64(bytes)) + "," +
                std::to_string(bytes.size()) + "\n";
    }
    for (const std::string& row : extra_record_rows) record += row + "\n";
    if (!unrecorded.count(dist_info() + "/RECORD")) record += dist_info() + "/RECORD,,\n";
    out.emplace_back(dist_info() + "/RECORD", record);
    return out;
  }

  // Writes the wheel into `dir` under `filename`; returns its path.
  std::string write(const fs::path& dir) const {
    fs::create_directories(dir);
    std::string path = (dir / filename).string();
    File out(::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
    REQUIRE(out.is_open());
    ZipWriter writer(out, dos_time_from_epoch(1700000000));
    for (const auto& [member, bytes] : members())
      REQUIRE(writer.add_generated(member, as_bytes(bytes), executable.count(member) > 0));
    REQUIRE(writer.finish());
    return path;
  }
};

// The extension module the two builds below differ in.
inline const std::string kCoreModule = "pkg/_core.cpython-311-x86_64-linux-gnu.so";

// One build of a small package for CUDA major `major`, labelled by a ".cuNN" suffix: a
// package with an __init__.py and a pure-Python module the builds share, and an extension
// module (not ELF: its name makes it native) whose bytes differ per build.
inline WheelBuilder cuda_build(int major) {
  const std::string label = "cu" + std::to_string(major);
  WheelBuilder b("pkg-1.0-cp311-cp311-linux_x86_64." + label + ".whl",
                 {{"pkg/__init__.py", "\"\"\"A test package.\"\"\"\nfrom .util import X\n"},
                  {"pkg/util.py", "X = 1\n"},
                  {kCoreModule, "extension module built for " + label + std::string(100, 'x')}});
  b.metadata_extra = {"Summary: a package built per CUDA major", "Requires-Dist: numpy>=1.24",
                      "Requires-Dist: cuda-bindings>=" + std::to_string(major) + ",<" + std::to_string(major + 1)};
  return b;
}

}  // namespace wm::test
