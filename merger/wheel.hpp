// A wheel read and validated: every member's bytes checked against its CRC, size and RECORD
// hash, the dist-info files parsed and checked against the file name.
#pragma once

#include "merger/digest.hpp"
#include "merger/elf.hpp"
#include "merger/headers.hpp"
#include "merger/problem.hpp"
#include "merger/requirement.hpp"
#include "merger/wheel_name.hpp"
#include "merger/zip_archive.hpp"

#include <map>
#include <memory>
#include <unordered_map>
#include <optional>
#include <string>
#include <vector>

namespace wm {

// The dist-info files are read whole, so their size is bounded (docs/WHEEL_RULES.md, "Limits"):
// WHEEL is a few lines; METADATA holds the long description; RECORD one row per member. A
// merged wheel's own files keep to the same limits, so that it can be read back.
inline constexpr size_t kMaxWheelFile = 1 << 20;
inline constexpr size_t kMaxMetadataFile = 16 << 20;
inline constexpr size_t kMaxRecordFile = 64 << 20;
// The text of __init__.py files kept for the planner, in all per wheel.
inline constexpr size_t kMaxInitSources = 64 << 20;

// One regular member. Its path is its archive entry's name, in the archive's NameStore, which
// copies of the Wheel share.
struct WheelFile {
  uint32_t entry = 0;  // index into the archive's entries
  bool executable = false;
  bool elf = false;  // starts with the ELF magic
  std::string_view path;
  uint64_t size = 0;
  std::optional<Sha256> sha256;  // once the member streamed and matched RECORD
  std::shared_ptr<const ElfInfo> elf_info;  // for ELF files we could read
};

struct WheelInput {
  std::string path;
  std::string label;  // given explicitly as PATH=LABEL, else empty
};

struct Wheel {
  std::string path;
  std::string display;  // the file name, as messages show it
  std::string label;    // "cu12"
  WheelName name;
  ZipArchive zip;
  std::string dist_info;  // "{name}-{version}.dist-info"
  std::string data_dir;   // "{name}-{version}.data", empty when absent
  Headers wheel_fields;
  Headers metadata;
  std::vector<Requirement> requires_dist;  // METADATA's Requires-Dist, parsed, in order
  std::vector<WheelFile> files;  // every regular member, in archive order
  std::vector<uint32_t> index;   // positions in files, sorted by path (build_index)
  // The text of "__init__.py" files, by path, in archive order while they fit kMaxInitSources
  // bytes in all: the planner puts the loader import into a package's __init__.py without
  // reading the archive again.
  std::unordered_map<std::string, std::string> init_sources;
  std::vector<std::string> warnings;


  const WheelFile* find(std::string_view path) const;
  std::optional<size_t> position(std::string_view path) const;  // in files
  void build_index();  // after files change
  // Frees files, index and init_sources (the bulk of a large wheel's model), keeping the
  // archive and the dist-info fields.
  void release_files();
  std::string base_version() const { return strip_local_label(name.version); }
};

// The label an input carries: explicit, ".cuNN" suffix, "+cuNN" local version; empty if none.
std::string detect_label(const WheelInput& input);

// Reads and validates one wheel. nullopt with problems when it is not valid.
std::optional<Wheel> read_wheel(const WheelInput& input, Problems& problems);

// Names in the dist-info directory that installers write and wheels must not carry.
bool is_installer_file(const std::string& dist_info_relative);
// Signature files, no longer used and not covered by RECORD.
bool is_record_signature(const std::string& dist_info_relative);

}  // namespace wm
