// Hand-built `Wheel` values for planner tests: what read_wheel would return for a small wheel,
// without any archive behind it (the planner must not read one).
#pragma once

#include "merger/base/bytes.hpp"
#include "merger/base/digest.hpp"
#include "merger/format/headers.hpp"
#include "merger/format/requirement.hpp"
#include "merger/format/wheel_name.hpp"
#include "merger/wheel.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

namespace wm::plantest {

// The sha256 of `content`: equal contents give equal hashes.
inline Sha256 hash_of(std::string_view content) { return sha256_of(as_bytes(content)); }

inline std::string so_name(const std::string& stem) { return stem + ".cpython-312-x86_64-linux-gnu.so"; }

// One build of "demo": files are added with a stand-in content (only its hash and size reach the
// model), then done() adds the dist-info files and returns the Wheel.
class ModelBuilder {
 public:
  // `filename` as parse_wheel_filename accepts it; the label as read_wheel would detect it
  // (empty: none).
  ModelBuilder(const std::string& filename, const std::string& label) {
    std::string why;
    auto name = parse_wheel_filename(filename, why);
    REQUIRE_MESSAGE(name, why);
    w_.path = "/in/" + filename;
    w_.display = filename;
    if (!label.empty()) {
      w_.label = VariantLabel::parse(label, why);
      REQUIRE_MESSAGE(w_.label, why);
    }
    w_.name = *name;
    dist_ = name->name + "-" + name->version;
    w_.dist_info = dist_ + ".dist-info";
    metadata_name_ = name->name;
  }

  // The usual input: demo-VERSION-cp312-cp312-linux_x86_64.LABEL.whl.
  static ModelBuilder demo(const std::string& label, const std::string& version = "1.0") {
    return ModelBuilder("demo-" + version + "-cp312-cp312-linux_x86_64." + label + ".whl", label);
  }

  const std::string& data_dir() {
    w_.data_dir = dist_ + ".data";
    return w_.data_dir;
  }

  ModelBuilder& file(const std::string& path, const std::string& content, bool executable = false) {
    // Each file has an archive entry of its name (no archive behind it: planning reads nothing
    // but the model), which its path views, as read_wheel makes them.
    WheelFile f;
    f.size = content.size();
    f.sha256 = hash_of(content);
    f.executable = executable;
    if (auto at = w_.position(path)) {  // the same path again: replaced
      f.entry = w_.files[*at].entry;
      f.path = w_.files[*at].path;
      w_.files[*at] = std::move(f);
    } else {
      f.entry = static_cast<uint32_t>(w_.zip.entries.size());
      ZipEntry e;
      e.uncompressed_size = content.size();
      f.path = w_.zip.add(e, path).name;
      w_.files.push_back(std::move(f));
      w_.build_index();
    }
    if (path == "__init__.py" || path.ends_with("/__init__.py")) w_.init_sources[path] = content;
    return *this;
  }
  // An ELF file: an extension module, or a shared library with a SONAME.
  ModelBuilder& elf(const std::string& path, const std::string& content, const std::string& soname = {},
                    std::vector<std::string> needed = {}) {
    file(path,
         "\x7f"
         "ELF" +
             content);
    WheelFile& f = w_.files[*w_.position(path)];
    f.elf = true;
    f.elf_info = std::make_shared<const ElfInfo>(ElfInfo{true, soname, std::move(needed)});
    return *this;
  }
  // A Windows image (a PE/COFF file, as read_wheel recognises it), whatever its name.
  ModelBuilder& pe(const std::string& path, const std::string& content) {
    file(path, "MZ" + content);
    w_.files[*w_.position(path)].pe = true;
    return *this;
  }
  // An __init__.py too large to have been read: present, but without its text.
  ModelBuilder& large_init(const std::string& path) {
    file(path, "x");
    w_.files[*w_.position(path)].size = kMaxInitSources + 1;
    w_.init_sources.erase(path);
    return *this;
  }
  // METADATA's Name, the file name's spelling unless set.
  ModelBuilder& metadata_name(const std::string& name) {
    metadata_name_ = name;
    return *this;
  }
  ModelBuilder& requires_dist(const std::string& text) {
    metadata_ += "Requires-Dist: " + text + "\n";
    std::string error;
    auto r = parse_requirement(text, error);
    REQUIRE_MESSAGE(r, error);
    w_.requires_dist.push_back(*r);
    return *this;
  }
  ModelBuilder& metadata_line(const std::string& line) {
    metadata_ += line + "\n";
    return *this;
  }
  ModelBuilder& dist_file(const std::string& relative, const std::string& content) {
    return file(w_.dist_info + "/" + relative, content);
  }

  Wheel done() {
    Problems problems;
    metadata_ = "Metadata-Version: 2.1\nName: " + metadata_name_ + "\nVersion: " + w_.name.version + "\n" + metadata_;
    auto metadata = parse_headers(metadata_, w_.display, "METADATA", problems);
    REQUIRE(metadata);
    w_.metadata = *metadata;
    std::string wheel = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n";
    for (const std::string& tag : w_.name.expanded_tags()) wheel += "Tag: " + tag + "\n";
    auto fields = parse_headers(wheel, w_.display, "WHEEL", problems);
    REQUIRE(fields);
    w_.wheel_fields = *fields;
    file(w_.dist_info + "/METADATA", metadata_);
    file(w_.dist_info + "/WHEEL", wheel);
    file(w_.dist_info + "/RECORD", "stands for the RECORD of " + w_.display);
    return std::move(w_);
  }

 private:
  Wheel w_;
  std::string dist_;
  std::string metadata_name_;
  std::string metadata_;  // the fields after Metadata-Version, Name and Version
};

}  // namespace wm::plantest
