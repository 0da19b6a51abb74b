// The structure of a zip archive as read from its central directory and checked against every
// local header. Reading refuses anything a strict consumer would (see docs/WHEEL_RULES.md, "Reading");
// member contents are streamed separately (member_stream.hpp).
#pragma once

#include "merger/base/problem.hpp"
#include "merger/zip/file.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

inline constexpr uint16_t kMethodStored = 0;
inline constexpr uint16_t kMethodDeflate = 8;
// General purpose flag bit 11: the entry's name is UTF-8.
inline constexpr uint16_t kFlagUtf8 = 0x0800;

// Where an archive's entry names live: appended once, never moved, so entries view them and a
// copied archive shares them.
class NameStore {
 public:
  std::string_view add(std::string_view name);

 private:
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t last_size_ = 0;  // of the last chunk
  size_t left_ = 0;       // its free bytes, at its end
};

// One member as the central directory describes it (fields ordered to pack: 64 bytes).
struct ZipEntry {
  std::string_view name;  // in its archive's NameStore
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;  // first byte of the compressed data
  uint32_t crc32 = 0;
  uint32_t external_attributes = 0;
  uint16_t version_needed = 0;  // low byte: version, high byte: host
  uint16_t flags = 0;
  uint16_t method = 0;
  uint8_t made_by_host = 0;  // 3 = Unix

  bool is_directory() const { return !name.empty() && name.back() == '/'; }
  bool executable() const;
};

struct ZipArchive {
  std::string path;  // as given by the user, for messages
  std::shared_ptr<File> file;
  uint64_t size = 0;
  std::vector<ZipEntry> entries;  // in central directory order
  std::shared_ptr<NameStore> names = std::make_shared<NameStore>();

  // Appends an entry named `name` (stored in `names`).
  ZipEntry& add(ZipEntry entry, std::string_view name) {
    entry.name = names->add(name);
    return entries.emplace_back(entry);
  }
  // Frees the entries and their names (views into this archive's names go with them); the file
  // stays open.
  void release_entries() {
    std::vector<ZipEntry>().swap(entries);
    names = std::make_shared<NameStore>();
  }
};

// Reads and checks the archive's structure. On failure returns nullopt and appends problems
// (kind invalid_input) naming `display_name`.
std::optional<ZipArchive> read_zip(const std::string& path, const std::string& display_name, Problems& problems);

// Two names that cannot both exist where a wheel is unpacked: the same after case folding or
// Unicode normalisation (macOS and Windows file systems merge them), or a path that is a file
// in one name and a directory in another ("a/b" and "a/b/c", or "a/b" and "a/b/").
struct NameClash {
  enum class Kind { duplicate, normalization, case_only, file_and_directory } kind;
  size_t name;   // index of the name reported (for file_and_directory: the file)
  size_t other;  // index of the name it clashes with
};
// Every clash among `names`, in a deterministic order; O(total length) expected.
std::vector<NameClash> find_name_clashes(const std::vector<std::string_view>& names);
inline std::vector<NameClash> find_name_clashes(const std::vector<std::string>& names) {
  return find_name_clashes(std::vector<std::string_view>(names.begin(), names.end()));
}
// The problem a clash is, naming `file` and the clashing name; `context` (when not empty)
// goes before what it says ("across builds: member names differ only in case").
Problem clash_problem(const NameClash& clash, const std::vector<std::string_view>& names, ProblemKind kind,
                      const std::string& file, std::string_view context);

// Why `name` is not a safe archive member name, or empty when it is.
std::string unsafe_name_reason(std::string_view name);

// Why Windows cannot create `name` (a safe name) as written, or empty: a segment holding one of
// <>:"|?* (":" opens an NTFS alternate data stream: pkg/__init__.py::$DATA), a reserved device
// name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension), or one ending in "." or " "
// (Windows drops them, so the file lands elsewhere than RECORD says).
std::string windows_name_reason(std::string_view name);

}  // namespace wm
