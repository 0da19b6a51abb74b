// A wheel read and validated: every member's bytes checked against its CRC, size and RECORD
// hash, the dist-info files parsed and checked against the file name.
#pragma once

#include "merger/base/digest.hpp"
#include "merger/base/problem.hpp"
#include "merger/format/elf.hpp"
#include "merger/format/headers.hpp"
#include "merger/format/label.hpp"
#include "merger/format/requirement.hpp"
#include "merger/format/wheel_name.hpp"
#include "merger/gpu_code.hpp"
#include "merger/zip/zip_archive.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
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
// What a PE image's COFF header (its machine) or a Mach-O file's header (the CPU type of each
// slice) says it runs on (merger/format/elf.hpp).
struct NativeMachines {
  bool macho = false;
  std::vector<uint32_t> machines;
  std::vector<std::string> imports;  // a PE image's imported DLLs (PeImportScanner), in its order
  std::string imports_unreadable;    // why they could not be read, where they could not
};

struct WheelFile {  // fields ordered to pack: 80 bytes
  std::string_view path;
  uint64_t size = 0;
  std::shared_ptr<const ElfInfo> elf_info;  // for ELF files we could read
  uint32_t entry = 0;                       // index into the archive's entries
  // The member's sha256: RECORD's claim (where RECORD uses sha256) until its bytes are
  // streamed, the digest of its bytes after; in a Wheel that read_wheel returns, both.
  std::optional<Sha256> sha256;
  bool executable : 1 = false;
  bool elf : 1 = false;                                      // starts with the ELF magic
  bool pe : 1 = false;                                       // a PE/COFF image (is_pe_image)
  RecordAlgorithm record_algorithm = RecordAlgorithm::none;  // RECORD's, for this file
};
static_assert(sizeof(WheelFile) <= 80);

struct WheelInput {
  std::string path;
  std::string label;  // the text given explicitly as PATH=LABEL, else empty
};

struct Wheel {
  std::string path;
  std::string display;  // the file name, as messages show it
  // The build's label (cu12), as its input names it; none where it names none, as for most
  // wheels `inspect` and `verify` read. A merge's inputs all have one: read_inputs and
  // plan_merge refuse a wheel without.
  std::optional<VariantLabel> label;
  WheelName name;
  ZipArchive zip;
  std::string dist_info;  // "{name}-{version}.dist-info"
  std::string data_dir;   // "{name}-{version}.data", empty when absent
  Headers wheel_fields;
  Headers metadata;
  std::vector<Requirement> requires_dist;  // METADATA's Requires-Dist, parsed, in order
  std::vector<WheelFile> files;            // every regular member, in archive order
  std::vector<uint32_t> index;             // positions in files, sorted by path (build_index)
  // The text of "__init__.py" files, by path, in archive order while they fit kMaxInitSources
  // bytes in all: the planner puts the loader import into a package's __init__.py without
  // reading the archive again.
  std::unordered_map<std::string, std::string> init_sources;
  std::vector<std::string> warnings;
  // The machines of its PE images and Mach-O files (ELF files have theirs in elf_info), by path.
  std::map<std::string, NativeMachines, std::less<>> native_machines;
  // The GPU code of its ELF and `.fatbin` files that have any, or whose fat binaries could not
  // be read (GpuCodeScanner, as each member streamed), by path.
  std::map<std::string, GpuCodeScan, std::less<>> gpu_code;

  const WheelFile* find(std::string_view path) const;
  std::optional<size_t> position(std::string_view path) const;  // in files
  void build_index();                                           // after files change
  // Frees files, index and init_sources (the bulk of a large wheel's model), keeping the
  // archive and the dist-info fields.
  void release_files();
  std::string base_version() const { return strip_local_label(name.version); }
  // The label of a build of a merge, for the stages after read_inputs and plan_merge have
  // refused every wheel without one; std::logic_error for a wheel that has none.
  const VariantLabel& build_label() const;
};

// The GPU code of a wheel's files, in archive order (`variants` and `inspect --gpu-code`).
BuildGpuCode build_gpu_code(const Wheel& wheel);
// The GPU code of its member `path` as a loader manifest lists it (spelled()); empty where the
// member has none or its fat binaries could not be read.
std::vector<std::string> spelled_gpu_code(const Wheel& wheel, std::string_view path);

// Where an input names its label, each with the label found there, in order of precedence:
// the explicit PATH=LABEL, the file name's ".cuNN" suffix, its "+cuNN" local version. This is
// where an input's label is read: a suffix or local version counts only where it is a label;
// a PATH=LABEL is kept either way, with `why` where it is none.
struct LabelSource {
  std::string_view form;              // "PATH=LABEL", ".LABEL suffix", "+LABEL local version"
  std::string text;                   // the label as the input names it (a local version's in its label form)
  std::optional<VariantLabel> label;  // what `text` names; nullopt only for a PATH=LABEL that is no label
  std::string why;                    // why it is none
};
std::vector<LabelSource> label_sources(const WheelInput& input);

// The label an input carries: the first of label_sources(); nullopt if none.
std::optional<LabelSource> detect_label(const WheelInput& input);

// Digests RECORD gives in another algorithm than sha256, by position in Wheel::files.
using OtherDigests = std::vector<std::pair<uint32_t, std::vector<uint8_t>>>;

// A wheel read up to its members' bytes: the archive, layout, WHEEL, METADATA and RECORD
// checked, RECORD's claims in its files.
struct OpenedWheel {
  Wheel wheel;
  OtherDigests other_digests;  // sorted by position
};

// Reads and validates one wheel, with the label its input names (detect_label; none where it
// names none or no valid one). nullopt with problems when it is not valid.
std::optional<Wheel> read_wheel(const WheelInput& input, Problems& problems);

// read_wheel in two steps, so that a merge opens its inputs one after another (RECORD's text
// and rows are the largest part of reading that does not last) and then streams the members of
// all of them together, largest first, on every core. The wheel at `path` gets `label`, which
// the caller has read from its input.
std::optional<OpenedWheel> open_wheel(const std::string& path, std::optional<VariantLabel> label, Problems& problems);
// Streams every member of every opened wheel: CRC, size, RECORD hash, ELF scan. Problems of
// wheel i go to problems[i] (sized like `opened`); a wheel with none is returned.
std::vector<std::optional<Wheel>> stream_wheels(std::vector<OpenedWheel> opened, std::vector<Problems>& problems);

// Names in the dist-info directory that installers write and wheels must not carry.
bool is_installer_file(const std::string& dist_info_relative);
// Signature files, no longer used and not covered by RECORD.
bool is_record_signature(const std::string& dist_info_relative);

}  // namespace wm
