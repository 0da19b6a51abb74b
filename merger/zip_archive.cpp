#include "merger/zip_archive.hpp"

#include "merger/bytes.hpp"
#include "merger/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <sys/stat.h>

namespace wm {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kDescriptorSig = 0x08074b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr size_t kEndSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
constexpr uint16_t kFlagEncrypted = 0x0001;
constexpr uint16_t kFlagDescriptor = 0x0008;
constexpr uint16_t kFlagStrongEncryption = 0x0040;
constexpr uint16_t kFlagMaskedHeaders = 0x2000;
constexpr uint16_t kFlagUtf8 = 0x0800;
// Bits a wheel writer legitimately sets: deflate options (1, 2), data descriptor (3), UTF-8
// names (11). Any other changes how some reader reads the entry (bit 5: patched data, which
// Python's zipfile refuses; bit 4: enhanced deflate; 12, 14, 15: reserved).
constexpr uint16_t kFlagsAllowed = 0x0002 | 0x0004 | kFlagDescriptor | kFlagUtf8;
// Extra fields that give a member another name or comment for the readers that honour them
// (Info-ZIP's unzip, and Python's zipfile since 3.12, each with its own CRC checks).
constexpr uint16_t kUnicodePathExtraId = 0x7075;
constexpr uint16_t kUnicodeCommentExtraId = 0x6375;
// "Version needed to extract" 4.5 (ZIP64); higher versions announce features no wheel
// consumer implements the same way.
constexpr uint8_t kMaxVersionNeeded = 45;
constexpr size_t kZip64EndSize = 56;
constexpr uint64_t kMaxNameBytes = 4096;
constexpr uint64_t kMaxSegmentBytes = 255;

struct Reader {
  const ZipArchive& zip;
  Problems& problems;
  const std::string& display;

  void fail(std::string member, std::string what, std::string expected = {},
            std::string found = {}) {
    problems.push_back(Problem{ProblemKind::invalid_input, display, std::move(member),
                               std::move(what), std::move(expected), std::move(found)});
  }

  bool read(uint64_t offset, std::vector<uint8_t>& out, size_t len) {
    if (offset > zip.size || len > zip.size - offset) return false;
    out.resize(len);
    return zip.file->read_at(offset, out);
  }
};

std::string hex32(uint64_t v) { return fmt::format("{:#010x}", v); }

// Fields of a ZIP64 extended-information extra field that replace 0xFFFFFFFF values.
struct Zip64Needs {
  bool uncompressed = false, compressed = false, offset = false, disk = false;
};

// Parses `extra`: its framing, no field that renames a member for some readers, and the ZIP64
// extended-information field holding exactly the values the record marked 0xFFFFFFFF (in a
// local header, also both sizes, which is what the format prescribes there). Returns an error
// text, empty when fine.
std::string apply_extra(ByteView extra, const Zip64Needs& needs, uint64_t& uncompressed, uint64_t& compressed,
                        uint64_t* offset, bool& had_zip64) {
  had_zip64 = false;
  size_t pos = 0;
  const bool local = offset == nullptr;
  const size_t need = 8 * (needs.uncompressed + needs.compressed + (!local && needs.offset)) + 4 * needs.disk;
  while (pos < extra.size()) {
    if (extra.size() - pos < 4) return "extra field framing is truncated";
    uint16_t id = extra.u16(pos);
    uint16_t len = extra.u16(pos + 2);
    pos += 4;
    if (extra.size() - pos < len) return fmt::format("extra field {:#06x} overruns its record", id);
    // Refused even where their text agrees today: whether unzip applies them hangs on its
    // CRC and length checks, which other readers never make.
    if (id == kUnicodePathExtraId || id == kUnicodeCommentExtraId)
      return fmt::format("Info-ZIP Unicode {} extra field ({:#06x}): unzip may read another {} than other readers",
                         id == kUnicodePathExtraId ? "path" : "comment", id, id == kUnicodePathExtraId ? "name" : "comment");
    if (id == kZip64ExtraId) {
      if (had_zip64) return "duplicated ZIP64 extra field";
      had_zip64 = true;
      bool both_sizes = local && len == 16;
      if (need == 0 && !both_sizes)
        return "ZIP64 extra field where no size or offset is 0xffffffff (readers disagree on whether to use it)";
      if (len != need && !both_sizes)
        return fmt::format("malformed ZIP64 extra field: {} bytes where {} are needed", len, need);
      size_t p = pos;
      if (both_sizes) {
        // A local header's ZIP64 field holds both sizes. Some writers (Bazel's wheelmaker) add
        // it beside real 32-bit sizes: harmless only where its values are those same sizes.
        uint64_t extra_uncompressed = extra.u64(p), extra_compressed = extra.u64(p + 8);
        if ((!needs.uncompressed && extra_uncompressed != uncompressed) ||
            (!needs.compressed && extra_compressed != compressed))
          return fmt::format("ZIP64 extra field sizes ({}, {}) disagree with the header's ({}, {})", extra_uncompressed,
                             extra_compressed, uncompressed, compressed);
        uncompressed = extra_uncompressed;
        compressed = extra_compressed;
      } else {
        if (needs.uncompressed) { uncompressed = extra.u64(p); p += 8; }
        if (needs.compressed) { compressed = extra.u64(p); p += 8; }
        if (!local && needs.offset) { *offset = extra.u64(p); p += 8; }
      }
    }
    pos += len;
  }
  if ((needs.uncompressed || needs.compressed || (!local && needs.offset)) && !had_zip64)
    return "sizes or offset are 0xffffffff but there is no ZIP64 extra field";
  return {};
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
}

}  // namespace

namespace {

// Paths interned one segment at a time: a directory's id comes from its parent's id and its own
// (folded or spelled) segment, so every prefix of every name costs only its last segment, and
// the whole check is linear in the total length of the names.
class PathIds {
 public:
  size_t id(size_t parent, std::string segment) {
    return ids_.emplace(Key{parent, std::move(segment)}, ids_.size() + 1).first->second;
  }

 private:
  struct Key {
    size_t parent;
    std::string segment;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const { return std::hash<std::string>()(k.segment) ^ (k.parent * 0x9E3779B97F4A7C15ull); }
  };
  std::unordered_map<Key, size_t, Hash> ids_;
};

// Folding a segment at a time gives the same key as folding the name: '/' is a starter that
// neither changes case nor composes. ASCII, nearly every name, needs no Unicode tables.
std::string fold_segment(std::string_view segment) {
  bool ascii = std::all_of(segment.begin(), segment.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
  if (!ascii) return fold_case(std::string(segment));
  std::string out(segment);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

std::vector<NameClash> find_name_clashes(const std::vector<std::string>& names) {
  std::vector<NameClash> clashes;
  auto kind_of = [&](std::string_view a, std::string_view b) {
    return a == b                                           ? NameClash::Kind::duplicate
           : nfc(std::string(a)) == nfc(std::string(b))     ? NameClash::Kind::normalization
                                                            : NameClash::Kind::case_only;
  };
  PathIds folded, spelled;
  // Walks the directories of `names[i]` (with its own path when it is a directory entry),
  // calling visit(folded id, spelled id, end of the prefix in the name); returns the folded and
  // spelled ids of the last segment's parent and the last segment's folded id.
  struct Walk { size_t parent_folded = 0, parent_spelled = 0; };
  auto walk = [&](size_t i, auto&& visit) {
    std::string_view name(names[i]);
    bool is_dir = name.ends_with('/');
    if (is_dir) name.remove_suffix(1);
    Walk w;
    size_t start = 0;
    for (size_t slash = name.find('/');; slash = name.find('/', start)) {
      size_t end = slash == std::string_view::npos ? name.size() : slash;
      std::string_view segment = name.substr(start, end - start);
      if (slash == std::string_view::npos && !is_dir) return std::make_pair(w, fold_segment(segment));
      size_t f = folded.id(w.parent_folded, fold_segment(segment));
      size_t sp = spelled.id(w.parent_spelled, std::string(segment));
      visit(f, sp, end);
      w = Walk{f, sp};
      if (slash == std::string_view::npos) return std::make_pair(w, std::string());
      start = slash + 1;
    }
  };
  // Files by folded path.
  std::unordered_map<size_t, size_t> files;  // folded id of the file -> name index
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].ends_with('/')) continue;
    auto [w, last] = walk(i, [](size_t, size_t, size_t) {});
    auto [it, fresh] = files.emplace(folded.id(w.parent_folded, std::move(last)), i);
    if (!fresh) clashes.push_back({kind_of(names[i], names[it->second]), i, it->second});
  }
  // Directories: one spelling per folded path, and none of them a file.
  struct Spelling { size_t spelled, name, end; };
  std::unordered_map<size_t, Spelling> dirs;  // folded id -> first spelling seen
  std::unordered_set<size_t> reported;         // folded ids already reported, once each
  for (size_t i = 0; i < names.size(); ++i) {
    walk(i, [&](size_t f, size_t sp, size_t end) {
      if (auto file = files.find(f); file != files.end() && reported.insert(f).second)
        clashes.push_back({NameClash::Kind::file_and_directory, file->second, i});
      auto [it, fresh] = dirs.emplace(f, Spelling{sp, i, end});
      if (fresh) return;
      const Spelling& first = it->second;
      if (first.spelled == sp) {
        // The same directory entry twice.
        if (end + 1 == names[i].size() && names[i].ends_with('/') && names[first.name] == names[i] && first.name != i)
          clashes.push_back({NameClash::Kind::duplicate, i, first.name});
      } else if (reported.insert(f).second) {
        clashes.push_back({kind_of(std::string_view(names[i]).substr(0, end),
                                   std::string_view(names[first.name]).substr(0, first.end)),
                           i, first.name});
      }
    });
  }
  return clashes;
}

Problem clash_problem(const NameClash& clash, const std::vector<std::string>& names, ProblemKind kind,
                      const std::string& file, std::string_view context) {
  const std::string& name = names[clash.name];
  const std::string& other = names[clash.other];
  Problem p{kind, file, name, {}, {}, {}};
  switch (clash.kind) {
    case NameClash::Kind::duplicate:
      p.what = "duplicate member name", p.expected = "unique names", p.found = "the name twice";
      break;
    case NameClash::Kind::normalization:
      p.what = "member names differ only in Unicode normalisation (NFC/NFD)", p.expected = "unique names";
      p.found = fmt::format("{} and {}", code_points(name), code_points(other));
      break;
    case NameClash::Kind::case_only:
      p.what = "member names differ only in case", p.expected = "unique names", p.found = "also " + other;
      // Look-alikes (the Kelvin sign and "k") are told apart by their code points.
      if (code_points(name) != name || code_points(other) != other)
        p.found += fmt::format(" ({} and {})", code_points(name), code_points(other));
      break;
    case NameClash::Kind::file_and_directory:
      p.what = "path is both a file and a directory", p.expected = "one kind of entry", p.found = "also " + other;
      break;
  }
  if (!context.empty()) p.what = std::string(context) + ": " + p.what;
  return p;
}

namespace {

// Names must stay distinct and of one kind wherever the wheel is unpacked.
void check_names(const ZipArchive& zip, Reader& r) {
  std::vector<std::string> names;
  names.reserve(zip.entries.size());
  for (const ZipEntry& e : zip.entries) names.push_back(e.name);
  for (const NameClash& clash : find_name_clashes(names))
    r.problems.push_back(clash_problem(clash, names, ProblemKind::invalid_input, r.display, {}));
}

}  // namespace

bool ZipEntry::executable() const {
  // What pip and installer keep, whatever the "made by" host: a regular file's exec bits.
  uint32_t mode = external_attributes >> 16;
  return S_ISREG(mode) && (mode & 0111) != 0;
}

std::string unsafe_name_reason(const std::string& name) {
  if (name.empty()) return "empty name";
  if (name.size() > kMaxNameBytes) return fmt::format("name of {} bytes (at most {})", name.size(), kMaxNameBytes);
  if (!is_valid_utf8(name)) return "name is not valid UTF-8";
  for (char c : name) {
    auto u = static_cast<uint8_t>(c);
    if (u < 0x20 || u == 0x7F) return "name contains a control character";
    if (c == '\\') return "name contains a backslash";
  }
  if (has_hidden_controls(name)) return "name contains a bidirectional or C1 control character";
  if (name.front() == '/') return "absolute name";
  if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<uint8_t>(name[0])))
    return "name starts with a drive letter";
  size_t start = 0;
  std::string_view view(name);
  if (view.back() == '/') view.remove_suffix(1);  // directory entries end with one slash
  while (start <= view.size()) {
    size_t end = view.find('/', start);
    if (end == std::string_view::npos) end = view.size();
    std::string_view segment = view.substr(start, end - start);
    if (segment.empty()) return "name has an empty path segment";
    if (segment.size() > kMaxSegmentBytes)
      return fmt::format("name has a path segment of {} bytes (at most {})", segment.size(), kMaxSegmentBytes);
    if (segment == "." || segment == "..") return fmt::format("name has a '{}' segment", segment);
    start = end + 1;
  }
  return {};
}

std::optional<ZipArchive> read_zip(const std::string& path, const std::string& display_name,
                                   Problems& problems) {
  ZipArchive zip;
  zip.path = path;
  std::string error;
  File file = File::open_read(path, error);
  if (!file.is_open()) {
    problems.push_back({ProblemKind::other, display_name, {}, "cannot open: " + error, {}, {}});
    return std::nullopt;
  }
  zip.size = file.size();
  zip.file = std::make_shared<File>(std::move(file));
  Reader r{zip, problems, display_name};
  const size_t before = problems.size();

  // The end record: the last 22 + comment bytes, its comment reaching exactly to the end.
  std::vector<uint8_t> tail;
  size_t tail_len = static_cast<size_t>(std::min<uint64_t>(zip.size, kEndSize + 0xFFFF));
  if (zip.size < kEndSize || !r.read(zip.size - tail_len, tail, tail_len)) {
    r.fail({}, "not a zip archive", "an end of central directory record",
           fmt::format("a file of {} bytes", zip.size));
    return std::nullopt;
  }
  std::optional<size_t> end_pos;
  for (size_t i = tail_len - kEndSize + 1; i-- > 0;) {
    ByteView v(tail.data() + i, tail_len - i);
    if (v.u32(0) == kEndSig && kEndSize + v.u16(20) == tail_len - i) {
      end_pos = i;
      break;
    }
  }
  if (!end_pos) {
    std::vector<uint8_t> head;
    bool looks_zip = r.read(0, head, 4) && ByteView(head).u32(0) == kLocalSig;
    r.fail({}, looks_zip ? "truncated zip archive" : "not a zip archive",
           "an end of central directory record at the end of the file",
           looks_zip ? "none (the file is cut short or has bytes after its end record)"
                     : "no zip structure");
    return std::nullopt;
  }
  const uint64_t end_offset = zip.size - tail_len + *end_pos;
  ByteView end(tail.data() + *end_pos, tail_len - *end_pos);
  // Python's zipfile takes the last end-record signature in the file; it must be this record's.
  // (Without a comment it takes the last 22 bytes as they are, searching nothing.)
  if (end.u16(20) != 0 && end.sub(1, end.size() - 1).find_u32(kEndSig)) {
    r.fail({}, "more than one end of central directory record",
           "one end record, the last signature " + hex32(kEndSig) + " of the file", "another signature after it");
    return std::nullopt;
  }
  ByteView comment = end.sub(kEndSize, end.u16(20));
  for (uint32_t sig : {kLocalSig, kCentralSig, kEndSig, kZip64EndSig}) {
    if (comment.find_u32(sig)) {
      r.fail({}, "archive comment contains zip records (another archive or end record)",
             "a comment without zip signatures", fmt::format("signature {}", hex32(sig)));
      return std::nullopt;
    }
  }
  uint64_t disk = end.u16(4), cd_disk = end.u16(6);
  uint64_t count_disk = end.u16(8), count = end.u16(10);
  uint64_t cd_size = end.u32(12), cd_offset = end.u32(16);
  uint64_t cd_end_limit = end_offset;  // where the central directory must end

  const bool needs_zip64 = disk == 0xFFFF || cd_disk == 0xFFFF || count_disk == 0xFFFF ||
                           count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF;
  std::vector<uint8_t> buf;
  if (end_offset >= 20 && r.read(end_offset - 20, buf, 20) && ByteView(buf).u32(0) == kZip64LocatorSig) {
    ByteView loc(buf);
    uint64_t z64_offset = loc.u64(8);
    if (loc.u32(4) != 0 || loc.u32(16) != 1) {
      r.fail({}, "multi-disk archive", "one disk",
             fmt::format("ZIP64 locator naming disk {} of {}", loc.u32(4), loc.u32(16)));
      return std::nullopt;
    }
    std::vector<uint8_t> rec;
    if (!r.read(z64_offset, rec, kZip64EndSize) || ByteView(rec).u32(0) != kZip64EndSig) {
      r.fail({}, "malformed ZIP64 end of central directory", "a ZIP64 end record at " + hex32(z64_offset),
             "no such record");
      return std::nullopt;
    }
    ByteView z(rec);
    // Python's zipfile reads the ZIP64 end record just before the locator, whatever the
    // locator says, so extensible data would make it read other bytes than we do.
    if (z.u64(4) != kZip64EndSize - 12) {
      r.fail({}, "ZIP64 end of central directory record carries extensible data",
             fmt::format("a record of {} bytes", kZip64EndSize - 12), fmt::format("{} bytes", z.u64(4)));
      return std::nullopt;
    }
    if (z.u64(4) + 12 + z64_offset != end_offset - 20) {
      r.fail({}, "bytes between the ZIP64 end record and its locator",
             fmt::format("the record to end at {}", end_offset - 20),
             fmt::format("it ends at {}", z.u64(4) + 12 + z64_offset));
      return std::nullopt;
    }
    // Readers that ignore the ZIP64 record must find the same directory: every classic field
    // that is not the 0xffff/0xffffffff placeholder equals its ZIP64 counterpart.
    const struct { const char* field; uint64_t classic, placeholder, zip64; } fields[] = {
        {"disk number", disk, 0xFFFF, z.u32(16)},
        {"directory disk", cd_disk, 0xFFFF, z.u32(20)},
        {"entries on this disk", count_disk, 0xFFFF, z.u64(24)},
        {"entry count", count, 0xFFFF, z.u64(32)},
        {"directory size", cd_size, 0xFFFFFFFF, z.u64(40)},
        {"directory offset", cd_offset, 0xFFFFFFFF, z.u64(48)},
    };
    for (const auto& f : fields) {
      if (f.classic != f.placeholder && f.classic != f.zip64) {
        r.fail({}, fmt::format("end record and ZIP64 end record disagree on the {}", f.field),
               fmt::format("{} (ZIP64 end record)", f.zip64), fmt::format("{} (end record)", f.classic));
        return std::nullopt;
      }
    }
    disk = z.u32(16);
    cd_disk = z.u32(20);
    count_disk = z.u64(24);
    count = z.u64(32);
    cd_size = z.u64(40);
    cd_offset = z.u64(48);
    cd_end_limit = z64_offset;
  } else if (needs_zip64) {
    r.fail({}, "missing ZIP64 end of central directory locator",
           "a locator before the end record, as its fields are 0xffff/0xffffffff", "none");
    return std::nullopt;
  }
  if (disk != 0 || cd_disk != 0 || count_disk != count) {
    r.fail({}, "multi-disk archive", "disk 0 holding every entry",
           fmt::format("disk {}, directory on disk {}, {} of {} entries here", disk, cd_disk,
                       count_disk, count));
    return std::nullopt;
  }
  if (cd_offset > cd_end_limit || cd_size != cd_end_limit - cd_offset) {
    // A directory found whole just before the end record, only later than recorded: bytes
    // were put in front of the archive (a self-extractor stub, a concatenation).
    std::vector<uint8_t> moved;
    if (cd_size <= cd_end_limit && cd_end_limit - cd_size > cd_offset &&
        r.read(cd_end_limit - cd_size, moved, 4) && ByteView(moved).u32(0) == kCentralSig) {
      r.fail({}, "bytes before the first local header", "the archive to start at offset 0",
             fmt::format("{} bytes in front of it", cd_end_limit - cd_size - cd_offset));
      return std::nullopt;
    }
    std::vector<uint8_t> between;
    bool extra_end = cd_offset + cd_size < cd_end_limit &&
                     r.read(cd_offset + cd_size, between, cd_end_limit - cd_offset - cd_size) &&
                     ByteView(between).find_u32(kEndSig);
    r.fail({}, extra_end ? "more than one end of central directory record"
                         : "central directory does not reach the end record",
           fmt::format("directory of {} bytes ending at {}", cd_size, cd_end_limit),
           fmt::format("{} bytes at offset {}", cd_size, cd_offset));
    return std::nullopt;
  }

  // The central directory, read whole: its size is bounded by the file's.
  std::vector<uint8_t> cd;
  if (!r.read(cd_offset, cd, cd_size)) {
    r.fail({}, "truncated central directory");
    return std::nullopt;
  }
  ByteView dir(cd);
  size_t pos = 0;
  while (pos < dir.size()) {
    if (dir.size() - pos < kCentralSize || dir.u32(pos) != kCentralSig) {
      r.fail({}, "malformed central directory", "a central directory header at offset " +
             std::to_string(cd_offset + pos), "other bytes");
      return std::nullopt;
    }
    ByteView h = dir.sub(pos, kCentralSize);
    size_t name_len = h.u16(28), extra_len = h.u16(30), comment_len = h.u16(32);
    if (dir.size() - pos - kCentralSize < name_len + extra_len + comment_len) {
      r.fail({}, "truncated central directory entry");
      return std::nullopt;
    }
    ZipEntry e;
    e.made_by_host = static_cast<uint8_t>(h.u16(4) >> 8);
    e.version_needed = h.u16(6);
    e.flags = h.u16(8);
    e.method = h.u16(10);
    e.crc32 = h.u32(16);
    e.compressed_size = h.u32(20);
    e.uncompressed_size = h.u32(24);
    e.external_attributes = h.u32(38);
    e.local_header_offset = h.u32(42);
    e.name = dir.sub(pos + kCentralSize, name_len).str();
    Zip64Needs needs{e.uncompressed_size == 0xFFFFFFFF, e.compressed_size == 0xFFFFFFFF,
                     e.local_header_offset == 0xFFFFFFFF, h.u16(34) == 0xFFFF};
    bool had_zip64 = false;
    std::string err = apply_extra(dir.sub(pos + kCentralSize + name_len, extra_len), needs,
                                  e.uncompressed_size, e.compressed_size,
                                        &e.local_header_offset, had_zip64);
    if (!err.empty()) r.fail(e.name, "central directory: " + err);
    if (h.u16(34) != 0 && h.u16(34) != 0xFFFF)
      r.fail(e.name, "multi-disk archive", "disk 0", fmt::format("disk {}", h.u16(34)));
    zip.entries.push_back(std::move(e));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  if (zip.entries.size() != count) {
    r.fail({}, "entry count mismatch", fmt::format("{} entries (end record)", count),
           fmt::format("{} in the central directory", zip.entries.size()));
  }
  if (problems.size() != before) return std::nullopt;

  // Each entry: flags, method, name, type, then its local header against the central record.
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // [local header, end of data) per entry
  for (ZipEntry& e : zip.entries) {
    if (e.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders)) {
      r.fail(e.name, "encrypted entry", "no encryption", fmt::format("flags {:#06x}", e.flags));
      continue;
    }
    if (e.flags & ~kFlagsAllowed) {
      r.fail(e.name, "general-purpose flag bits that readers treat differently",
             fmt::format("only bits 1, 2, 3 and 11 ({:#06x})", kFlagsAllowed), fmt::format("flags {:#06x}", e.flags));
      continue;
    }
    if ((e.version_needed & 0xFF) > kMaxVersionNeeded) {
      r.fail(e.name, "version needed to extract is beyond what wheel consumers support",
             fmt::format("at most {}.{}", kMaxVersionNeeded / 10, kMaxVersionNeeded % 10),
             fmt::format("{}.{}", (e.version_needed & 0xFF) / 10, (e.version_needed & 0xFF) % 10));
      continue;
    }
    if (e.method != kMethodStored && e.method != kMethodDeflate) {
      r.fail(e.name, "unsupported compression method", "0 (stored) or 8 (deflate)",
             std::to_string(e.method));
      continue;
    }
    if (e.method == kMethodStored && e.compressed_size != e.uncompressed_size) {
      r.fail(e.name, "stored entry with differing sizes",
             fmt::format("compressed size = uncompressed size {}", e.uncompressed_size),
             std::to_string(e.compressed_size));
    }
    if (std::string why = unsafe_name_reason(e.name); !why.empty()) {
      r.fail(e.name, "unsafe member name", "a relative path of safe UTF-8 segments",
             why);
      continue;
    }
    if (!(e.flags & kFlagUtf8) && !is_ascii(e.name)) {
      r.fail(e.name, "non-ASCII name without the UTF-8 flag (bit 11)",
             "the UTF-8 flag, as readers otherwise decode the name as code page 437", "no flag");
      continue;
    }
    // The Unix mode, where a writer put one (every host's writers may): pip and installer read
    // it whatever the "made by" host says, and unzip restores links and devices from it.
    uint32_t type = (e.external_attributes >> 16) & S_IFMT;
    if (!(type == 0 || type == S_IFREG || (type == S_IFDIR && e.is_directory()))) {
      r.fail(e.name, "not a regular file", e.is_directory() ? "a directory" : "a regular file",
             type == S_IFLNK ? "a symbolic link"
             : type == S_IFDIR ? "a directory"
                               : fmt::format("file type {:#o}", type));
    }
    // Exec bits on a mode with no file type: unzip restores them, pip and installer do not.
    uint32_t mode = e.external_attributes >> 16;
    if (type == 0 && (mode & 0111) && !e.is_directory())
      r.fail(e.name, "executable bits without a file type", "S_IFREG with the exec bits, or no exec bits",
             fmt::format("mode {:#o} (unzip would make it executable, pip and installer would not)", mode));
    constexpr uint32_t kDosDirectory = 0x10;
    if ((e.external_attributes & kDosDirectory) && !e.is_directory())
      r.fail(e.name, "not a regular file", "a regular file", "the MS-DOS directory attribute");
    if (e.is_directory() && e.uncompressed_size != 0) {
      r.fail(e.name, "directory entry with data", "0 bytes",
             fmt::format("{} bytes", e.uncompressed_size));
    }

    std::vector<uint8_t> lh;
    if (!r.read(e.local_header_offset, lh, kLocalSize) || ByteView(lh).u32(0) != kLocalSig) {
      r.fail(e.name, "entry has no local header", "a local header at offset " +
             std::to_string(e.local_header_offset), "other bytes");
      continue;
    }
    ByteView l(lh);
    size_t lname_len = l.u16(26), lextra_len = l.u16(28);
    std::vector<uint8_t> var;
    if (!r.read(e.local_header_offset + kLocalSize, var, lname_len + lextra_len)) {
      r.fail(e.name, "truncated local header");
      continue;
    }
    ByteView lv(var);
    std::string lname = lv.sub(0, lname_len).str();
    uint16_t lflags = l.u16(6), lmethod = l.u16(8);
    if ((l.u16(4) & 0xFF) > kMaxVersionNeeded)
      r.fail(e.name, "local header: version needed to extract is beyond what wheel consumers support",
             fmt::format("at most {}.{}", kMaxVersionNeeded / 10, kMaxVersionNeeded % 10),
             fmt::format("{}.{}", (l.u16(4) & 0xFF) / 10, (l.u16(4) & 0xFF) % 10));
    uint32_t lcrc = l.u32(14);
    uint64_t lcsize = l.u32(18), lusize = l.u32(22);
    bool local_zip64 = false;
    std::string err = apply_extra(lv.sub(lname_len, lextra_len), Zip64Needs{lusize == 0xFFFFFFFF, lcsize == 0xFFFFFFFF},
                                        lusize, lcsize, nullptr, local_zip64);
    if (!err.empty()) r.fail(e.name, "local header: " + err);
    auto mismatch = [&](const char* field, const std::string& central, const std::string& local) {
      r.fail(e.name, fmt::format("local header and central directory disagree on the {}", field),
             central + " (central directory)", local + " (local header)");
    };
    if (lname != e.name) mismatch("name", e.name, lname);
    if (lflags != e.flags) mismatch("flags", hex32(e.flags), hex32(lflags));
    if (lmethod != e.method) mismatch("compression method", std::to_string(e.method), std::to_string(lmethod));
    e.data_offset = e.local_header_offset + kLocalSize + lname_len + lextra_len;
    uint64_t data_end = e.data_offset + e.compressed_size;
    if (data_end < e.data_offset || data_end > zip.size) {
      r.fail(e.name, "entry data runs past the end of the file",
             fmt::format("{} bytes at offset {}", e.compressed_size, e.data_offset),
             fmt::format("a file of {} bytes", zip.size));
      continue;
    }
    if (e.flags & kFlagDescriptor) {
      // A data descriptor follows the data; the local header's own fields may be zero.
      std::vector<uint8_t> dd;
      size_t field = local_zip64 ? 8 : 4;
      if (!r.read(data_end, dd, 4 + 4 + 2 * field)) {
        r.fail(e.name, "truncated data descriptor");
        continue;
      }
      ByteView d(dd);
      size_t p = d.u32(0) == kDescriptorSig ? 4 : 0;
      lcrc = d.u32(p);
      lcsize = field == 8 ? d.u64(p + 4) : d.u32(p + 4);
      lusize = field == 8 ? d.u64(p + 4 + field) : d.u32(p + 4 + field);
      data_end += p + 4 + 2 * field;
    }
    if (lcrc != e.crc32) mismatch("CRC-32", hex32(e.crc32), hex32(lcrc));
    if (lcsize != e.compressed_size)
      mismatch("compressed size", std::to_string(e.compressed_size), std::to_string(lcsize));
    if (lusize != e.uncompressed_size)
      mismatch("uncompressed size", std::to_string(e.uncompressed_size), std::to_string(lusize));
    spans.emplace_back(e.local_header_offset, data_end);
  }
  if (problems.size() != before) return std::nullopt;
  check_names(zip, r);
  if (problems.size() != before) return std::nullopt;

  // Entries must tile the file from offset 0 to the central directory with nothing between.
  std::sort(spans.begin(), spans.end());
  uint64_t expected = 0;
  for (auto [start, stop] : spans) {
    if (start != expected) {
      std::vector<uint8_t> probe;
      bool hidden = start > expected && r.read(expected, probe, 4) && ByteView(probe).u32(0) == kLocalSig;
      r.fail({}, start < expected ? "overlapping entries"
                 : hidden       ? "local header not listed in the central directory"
                 : expected == 0 ? "bytes before the first local header"
                                 : "bytes between entries",
             fmt::format("an entry at offset {}", expected), fmt::format("next entry at {}", start));
      return std::nullopt;
    }
    expected = stop;
  }
  if (expected != cd_offset) {
    r.fail({}, expected < cd_offset ? "bytes between the last entry and the central directory"
                                    : "entries overlap the central directory",
           fmt::format("the central directory at offset {}", expected),
           fmt::format("it starts at {}", cd_offset));
    return std::nullopt;
  }
  return zip;
}

}  // namespace wm
