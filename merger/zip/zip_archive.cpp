#include "merger/zip/zip_archive.hpp"

#include <cstring>

#include "merger/base/bytes.hpp"
#include "merger/base/text.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

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

// What every check of read_zip shares: the archive being read (its entries filled in as the
// central directory is read), the problems found so far and the name they give the file.
struct ZipReader {
  ZipArchive& zip;
  Problems& problems;
  const std::string& display;

  void fail(std::string_view member, std::string what, std::string expected = {}, std::string found = {}) {
    problems.push_back(Problem{ProblemKind::invalid_input, display, std::string(member), std::move(what),
                               std::move(expected), std::move(found)});
  }

  // Small reads (local headers, read in directory order, mostly ascending) come from a window
  // of the file read ahead, one system call per window rather than per entry.
  bool read(uint64_t offset, std::vector<uint8_t>& out, size_t len) {
    if (offset > zip.size || len > zip.size - offset) return false;
    out.resize(len);
    if (len > kSmallRead) return zip.file->read_at(offset, out);
    if (offset < window_offset || offset + len > window_offset + window.size()) {
      window.resize(static_cast<size_t>(std::min<uint64_t>(kWindow, zip.size - offset)));
      window_offset = offset;
      if (!zip.file->read_at(offset, window)) {
        window.clear();
        return false;
      }
    }
    std::copy_n(window.begin() + static_cast<ptrdiff_t>(offset - window_offset), len, out.begin());
    return true;
  }

  static constexpr size_t kSmallRead = 64 << 10, kWindow = 256 << 10;
  std::vector<uint8_t> window;
  uint64_t window_offset = 0;
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
                         id == kUnicodePathExtraId ? "path" : "comment", id,
                         id == kUnicodePathExtraId ? "name" : "comment");
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
        if (needs.uncompressed) {
          uncompressed = extra.u64(p);
          p += 8;
        }
        if (needs.compressed) {
          compressed = extra.u64(p);
          p += 8;
        }
        if (!local && needs.offset) {
          *offset = extra.u64(p);
          p += 8;
        }
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

// A name folded as case-insensitive, normalising file systems compare it: segment by segment
// ('/' neither changes case nor composes); ASCII, nearly every name, needs no Unicode tables.
// Empty where the folded name is the name itself (ASCII without capitals).
std::string folded_name(std::string_view name) {
  if (is_ascii(name)) {
    if (std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) return {};
    std::string out(name);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  std::string out;
  size_t start = 0;
  for (size_t slash;; start = slash + 1) {
    slash = name.find('/', start);
    out += fold_case(
        std::string(name.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start)));
    if (slash == std::string_view::npos) return out;
    out += '/';
  }
}

// Finds the clashes of find_name_clashes by sorting: the names ordered by folded path, so that
// one folded path's names are adjacent and the names starting with any prefix (those under a
// folded directory, those below a file's path) are contiguous. One pass then compares
// neighbours, keeping on stacks the directories of the last name and the files whose paths
// prefix it. Memory is a key per name (and the folded text of names with capitals or
// non-ASCII); time is the sort's (O(n log n) comparisons, each a memcmp) and one pass over the
// names.
class ClashFinder {
 public:
  explicit ClashFinder(const std::vector<std::string_view>& names) : names_(names) {}

  std::vector<NameClash> find() {
    sort_keys();
    for (size_t k = 0; k < keys_.size();) {
      size_t end = k + 1;
      while (end < keys_.size() && keys_[end].folded == keys_[k].folded) ++end;
      for (size_t j = k; j < end; ++j) directories(j);
      if (auto file = same_folded_path(k, end)) files_.push_back({keys_[k].folded, *file});
      k = end;
    }
    close_directories(0);
    std::sort(clashes_.begin(), clashes_.end(), [](const NameClash& a, const NameClash& b) {
      return std::pair(a.name, a.other) < std::pair(b.name, b.other);
    });
    return std::move(clashes_);
  }

 private:
  struct Key {
    std::string_view folded;
    uint32_t name;
  };
  // A directory of the last name visited, at some depth: the names below it so far.
  struct Directory {
    uint32_t first;                // the lowest index below it
    std::optional<uint32_t> file;  // the lowest index of a file of the same folded path
    bool reported = false;         // a spelling clash was reported for it
  };

  static NameClash::Kind kind_of(std::string_view a, std::string_view b) {
    return a == b                                       ? NameClash::Kind::duplicate
           : nfc(std::string(a)) == nfc(std::string(b)) ? NameClash::Kind::normalization
                                                        : NameClash::Kind::case_only;
  }

  void sort_keys() {
    keys_.reserve(names_.size());
    std::vector<std::pair<uint32_t, std::string>> folded;  // names whose folded text differs
    for (size_t i = 0; i < names_.size(); ++i) {
      std::string f = folded_name(names_[i]);
      if (!f.empty()) folded.emplace_back(static_cast<uint32_t>(i), std::move(f));
    }
    folded_.reserve(std::accumulate(folded.begin(), folded.end(), size_t{0},
                                    [](size_t n, const auto& f) { return n + f.second.size(); }));
    std::vector<std::pair<size_t, size_t>> at;  // offset and length in folded_
    for (const auto& [i, text] : folded) {
      at.emplace_back(folded_.size(), text.size());
      folded_ += text;
    }
    size_t next = 0;
    for (size_t i = 0; i < names_.size(); ++i) {
      std::string_view f = names_[i];
      if (next < folded.size() && folded[next].first == i) {
        f = std::string_view(folded_).substr(at[next].first, at[next].second);
        ++next;
      }
      keys_.push_back({f, static_cast<uint32_t>(i)});
    }
    std::sort(keys_.begin(), keys_.end(), [&](const Key& a, const Key& b) {
      if (int c = a.folded.compare(b.folded)) return c < 0;
      if (int c = names_[a.name].compare(names_[b.name])) return c < 0;
      return a.name < b.name;
    });
  }

  // keys_[k, end) share one folded path. Files: each name clashes with the lowest index among
  // them, which is returned. Directory entries: an identical name twice is a duplicate
  // (differently spelled ones are a directory's spelling clash, found by directories()).
  std::optional<uint32_t> same_folded_path(size_t k, size_t end) {
    uint32_t first = keys_[k].name;
    for (size_t j = k + 1; j < end; ++j) first = std::min(first, keys_[j].name);
    const bool files = !names_[keys_[k].name].ends_with('/');
    for (size_t j = k; j < end; ++j) {
      const uint32_t i = keys_[j].name;
      if (files && i != first)
        clashes_.push_back({kind_of(names_[i], names_[first]), i, first});
      else if (!files && j > k && names_[i] == names_[keys_[j - 1].name])
        clashes_.push_back({NameClash::Kind::duplicate, i, keys_[j - 1].name});
    }
    if (!files) return std::nullopt;
    return first;
  }

  // The directories of keys_[j]'s name (every prefix before a '/'): those it shares with the
  // last name visited stay open, the others close, and its own open; a directory whose folded
  // path is a file's is that file's clash.
  void directories(size_t j) {
    const std::string_view folded = keys_[j].folded, name = names_[keys_[j].name];
    const uint32_t i = keys_[j].name;
    // Files whose path no longer prefixes the names (sorted, none after this one does either).
    while (!files_.empty() && !folded.starts_with(files_.back().folded)) files_.pop_back();
    // The directories it shares with the last name: those whose '/' lies within the folded
    // texts' common prefix.
    size_t common = 0, depth = 0;
    while (common < std::min(folded.size(), last_folded_.size()) && folded[common] == last_folded_[common])
      depth += folded[common++] == '/';
    close_directories(depth);
    // The first shared directory the two names spell differently (each deeper one differs
    // because it does) is a spelling clash, reported once per directory.
    size_t spelled = 0;  // how far the names themselves agree
    while (spelled < std::min(name.size(), last_name_.size()) && name[spelled] == last_name_[spelled]) ++spelled;
    for (size_t d = 0, slash = name.find('/'); d < open_.size(); ++d, slash = name.find('/', slash + 1)) {
      if (slash < spelled) continue;
      if (!open_[d].reported) {
        open_[d].reported = true;
        clashes_.push_back({kind_of(name.substr(0, slash), last_name_.substr(0, slash_in(last_name_, d))),
                            std::max(i, last_index_), std::min(i, last_index_)});
      }
      break;
    }
    for (Directory& dir : open_) dir.first = std::min(dir.first, i);
    // The files left prefix this name, shortest first: each directory opened here is at most
    // one of them.
    size_t f = 0;
    for (size_t c = common; c < folded.size(); ++c) {
      if (folded[c] != '/') continue;
      Directory dir{i, std::nullopt};
      while (f < files_.size() && files_[f].folded.size() < c) ++f;
      if (f < files_.size() && files_[f].folded.size() == c) dir.file = files_[f].first;
      open_.push_back(dir);
    }
    last_folded_ = folded;
    last_name_ = name;
    last_index_ = i;
  }

  // Where the d-th '/' (from 0) is in `name`.
  static size_t slash_in(std::string_view name, size_t d) {
    size_t at = name.find('/');
    for (size_t k = 0; k < d; ++k) at = name.find('/', at + 1);
    return at;
  }

  // Closes the open directories deeper than `depth`: a file of a directory's folded path
  // clashes with the lowest index below it.
  void close_directories(size_t depth) {
    while (open_.size() > depth) {
      const Directory& dir = open_.back();
      if (dir.file) clashes_.push_back({NameClash::Kind::file_and_directory, *dir.file, dir.first});
      open_.pop_back();
    }
  }

  const std::vector<std::string_view>& names_;
  std::string folded_;  // the folded text of names that fold to another text
  std::vector<Key> keys_;
  std::vector<Directory> open_;
  // Files whose folded path prefixes the last name, nested (each prefixes the next): the lowest
  // index among a path's files.
  struct FilePath {
    std::string_view folded;
    uint32_t first;
  };
  std::vector<FilePath> files_;
  std::vector<NameClash> clashes_;
  std::string_view last_folded_, last_name_;
  uint32_t last_index_ = 0;
};

}  // namespace

std::vector<NameClash> find_name_clashes(const std::vector<std::string_view>& names) {
  return ClashFinder(names).find();
}

Problem clash_problem(const NameClash& clash, const std::vector<std::string_view>& names, ProblemKind kind,
                      const std::string& file, std::string_view context) {
  const std::string name(names[clash.name]);
  const std::string other(names[clash.other]);
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
      p.what = "member names differ only in case", p.expected = "unique names", p.found = "another member, " + other;
      // Look-alikes (the Kelvin sign and "k") are told apart by their code points.
      if (code_points(name) != name || code_points(other) != other)
        p.found += fmt::format(" ({} and {})", code_points(name), code_points(other));
      break;
    case NameClash::Kind::file_and_directory:
      p.what = "path is both a file and a directory", p.expected = "one kind of entry",
      p.found = "another member, " + other;
      break;
  }
  if (!context.empty()) p.what = std::string(context) + ": " + p.what;
  return p;
}

namespace {

// Names must stay distinct and of one kind wherever the wheel is unpacked.
void check_names(const ZipArchive& zip, ZipReader& r) {
  std::vector<std::string_view> names;
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

std::string unsafe_name_reason(std::string_view name) {
  if (name.empty()) return "an empty name";
  if (name.size() > kMaxNameBytes) return fmt::format("a name of {} bytes (at most {})", name.size(), kMaxNameBytes);
  if (!is_valid_utf8(name)) return "a name that is not valid UTF-8";
  for (char c : name) {
    auto u = static_cast<uint8_t>(c);
    if (u < 0x20 || u == 0x7F) return "a control character in the name";
    if (c == '\\') return "a backslash in the name";
  }
  if (has_hidden_controls(name)) return "a bidirectional or C1 control character in the name";
  if (name.front() == '/') return "an absolute name";
  if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<uint8_t>(name[0])))
    return "a name that starts with a drive letter";
  size_t start = 0;
  std::string_view view(name);
  if (view.back() == '/') view.remove_suffix(1);  // directory entries end with one slash
  while (start <= view.size()) {
    size_t end = view.find('/', start);
    if (end == std::string_view::npos) end = view.size();
    std::string_view segment = view.substr(start, end - start);
    if (segment.empty()) return "an empty path segment";
    if (segment.size() > kMaxSegmentBytes)
      return fmt::format("a path segment of {} bytes (at most {})", segment.size(), kMaxSegmentBytes);
    if (segment == "." || segment == "..") return fmt::format("a '{}' segment", segment);
    start = end + 1;
  }
  return {};
}

std::string windows_name_reason(std::string_view name) {
  if (name.ends_with('/')) name.remove_suffix(1);
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = std::min(name.find('/', start), name.size());
    std::string_view segment = name.substr(start, end - start);
    start = end + 1;
    if (segment.empty()) continue;
    if (size_t bad = segment.find_first_of("<>:\"|?*"); bad != std::string_view::npos)
      return fmt::format("the segment \"{}\" with '{}', which Windows does not allow in a file name{}", segment,
                         segment[bad], segment[bad] == ':' ? " (it names an NTFS alternate data stream)" : "");
    if (segment.back() == '.' || segment.back() == ' ')
      return fmt::format("the segment \"{}\" ending in '{}', which Windows drops", segment, segment.back());
    // The device names are reserved whatever follows the first dot, and before it trailing spaces.
    std::string_view stem = segment.substr(0, segment.find('.'));
    while (!stem.empty() && stem.back() == ' ') stem.remove_suffix(1);
    std::string upper;
    for (char c : stem) upper += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    const bool numbered = (upper.starts_with("COM") || upper.starts_with("LPT")) &&
                          ((upper.size() == 4 && upper[3] >= '1' && upper[3] <= '9') || upper.substr(3) == "\xc2\xb9" ||
                           upper.substr(3) == "\xc2\xb2" || upper.substr(3) == "\xc2\xb3");
    if (upper == "CON" || upper == "PRN" || upper == "AUX" || upper == "NUL" || numbered)
      return fmt::format("the segment \"{}\", the reserved Windows device name {}", segment, stem);
  }
  return {};
}

namespace {

// A range of the file, [first byte, end): a member from its local header to the end of its data
// (and data descriptor).
using Span = std::pair<uint64_t, uint64_t>;

// The end of central directory record, comment included, as found in the file's last bytes.
struct EndRecord {
  std::vector<uint8_t> tail;  // the file's last 22 + 0xffff bytes (or all of a smaller file)
  size_t pos = 0;             // where the record starts in `tail`
  uint64_t offset = 0;        // where it starts in the file
  ByteView bytes() const { return ByteView(tail.data() + pos, tail.size() - pos); }
};

// Where the central directory is and how many entries it holds, from the end record or, where
// there is one, the ZIP64 end record.
struct Directory {
  uint64_t disk = 0, cd_disk = 0, count_disk = 0, count = 0;
  uint64_t size = 0, offset = 0;
  uint64_t end_limit = 0;  // where the central directory must end
};

// Finds the end record: the last 22 + comment bytes, its comment reaching exactly to the end,
// as the strictest reader finds it. A file with none is no zip, or one cut short or with bytes
// after its end (told apart by a local header at offset 0).
std::optional<EndRecord> find_end_record(ZipReader& r) {
  EndRecord end;
  size_t tail_len = static_cast<size_t>(std::min<uint64_t>(r.zip.size, kEndSize + 0xFFFF));
  if (r.zip.size < kEndSize || !r.read(r.zip.size - tail_len, end.tail, tail_len)) {
    r.fail({}, "not a zip archive", "an end of central directory record",
           fmt::format("a file of {} bytes", r.zip.size));
    return std::nullopt;
  }
  std::optional<size_t> end_pos;
  for (size_t i = tail_len - kEndSize + 1; i-- > 0;) {
    ByteView v(end.tail.data() + i, tail_len - i);
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
           looks_zip ? "no end record (the file is cut short or has bytes after its end record)" : "no zip structure");
    return std::nullopt;
  }
  end.pos = *end_pos;
  end.offset = r.zip.size - tail_len + *end_pos;
  return end;
}

// Checks that every reader settles on this end record: no end signature after its start (the
// later end signature Python's zipfile would take), and no zip records in its comment (another
// archive or end record some reader could find instead).
bool check_end_record(ZipReader& r, ByteView end) {
  // Python's zipfile takes the last end-record signature in the file; it must be this record's.
  // (Without a comment it takes the last 22 bytes as they are, searching nothing.)
  if (end.u16(20) != 0 && end.sub(1, end.size() - 1).find_u32(kEndSig)) {
    r.fail({}, "more than one end of central directory record",
           "one end record, the last signature " + hex32(kEndSig) + " of the file", "another signature after it");
    return false;
  }
  ByteView comment = end.sub(kEndSize, end.u16(20));
  for (uint32_t sig : {kLocalSig, kCentralSig, kEndSig, kZip64EndSig}) {
    if (comment.find_u32(sig)) {
      r.fail({}, "archive comment contains zip records (another archive or end record)",
             "a comment without zip signatures", fmt::format("signature {}", hex32(sig)));
      return false;
    }
  }
  return true;
}

// The directory as the classic end record gives it, to end where the end record starts.
Directory classic_directory(ByteView end, uint64_t end_offset) {
  Directory d;
  d.disk = end.u16(4), d.cd_disk = end.u16(6);
  d.count_disk = end.u16(8), d.count = end.u16(10);
  d.size = end.u32(12), d.offset = end.u32(16);
  d.end_limit = end_offset;
  return d;
}

// Replaces the classic fields of `d` with those of the ZIP64 end record `z` (at `z64_offset`),
// after checking that each classic field that is not the 0xffff/0xffffffff placeholder equals
// its ZIP64 counterpart: readers that ignore the ZIP64 record must find the same directory.
bool adopt_zip64_fields(ZipReader& r, ByteView z, uint64_t z64_offset, Directory& d) {
  const struct {
    const char* field;
    uint64_t classic, placeholder, zip64;
  } fields[] = {
      {"disk number", d.disk, 0xFFFF, z.u32(16)},
      {"directory disk", d.cd_disk, 0xFFFF, z.u32(20)},
      {"entries on this disk", d.count_disk, 0xFFFF, z.u64(24)},
      {"entry count", d.count, 0xFFFF, z.u64(32)},
      {"directory size", d.size, 0xFFFFFFFF, z.u64(40)},
      {"directory offset", d.offset, 0xFFFFFFFF, z.u64(48)},
  };
  for (const auto& f : fields) {
    if (f.classic != f.placeholder && f.classic != f.zip64) {
      r.fail({}, fmt::format("end record and ZIP64 end record disagree on the {}", f.field),
             fmt::format("{} (ZIP64 end record)", f.zip64), fmt::format("{} (end record)", f.classic));
      return false;
    }
  }
  d.disk = z.u32(16);
  d.cd_disk = z.u32(20);
  d.count_disk = z.u64(24);
  d.count = z.u64(32);
  d.size = z.u64(40);
  d.offset = z.u64(48);
  d.end_limit = z64_offset;
  return true;
}

// The ZIP64 end record and its locator, just before the end record: where present, one disk, a
// record of the fixed size ending exactly at the locator (Python's zipfile reads it there,
// whatever the locator says), agreeing with the end record; where absent, no end record field
// may be a ZIP64 placeholder.
bool apply_zip64_end(ZipReader& r, uint64_t end_offset, Directory& d) {
  const bool needs_zip64 = d.disk == 0xFFFF || d.cd_disk == 0xFFFF || d.count_disk == 0xFFFF || d.count == 0xFFFF ||
                           d.size == 0xFFFFFFFF || d.offset == 0xFFFFFFFF;
  std::vector<uint8_t> buf;
  if (!(end_offset >= 20 && r.read(end_offset - 20, buf, 20) && ByteView(buf).u32(0) == kZip64LocatorSig)) {
    if (needs_zip64) {
      r.fail({}, "missing ZIP64 end of central directory locator",
             "a locator before the end record, as its fields are 0xffff/0xffffffff", "no locator");
      return false;
    }
    return true;
  }
  ByteView loc(buf);
  uint64_t z64_offset = loc.u64(8);
  if (loc.u32(4) != 0 || loc.u32(16) != 1) {
    r.fail({}, "multi-disk archive", "one disk",
           fmt::format("ZIP64 locator naming disk {} of {}", loc.u32(4), loc.u32(16)));
    return false;
  }
  std::vector<uint8_t> rec;
  if (!r.read(z64_offset, rec, kZip64EndSize) || ByteView(rec).u32(0) != kZip64EndSig) {
    r.fail({}, "malformed ZIP64 end of central directory", "a ZIP64 end record at " + hex32(z64_offset),
           "no such record");
    return false;
  }
  ByteView z(rec);
  // Python's zipfile reads the ZIP64 end record just before the locator, whatever the
  // locator says, so extensible data would make it read other bytes than we do.
  if (z.u64(4) != kZip64EndSize - 12) {
    r.fail({}, "ZIP64 end of central directory record carries extensible data",
           fmt::format("a record of {} bytes", kZip64EndSize - 12), fmt::format("{} bytes", z.u64(4)));
    return false;
  }
  if (z.u64(4) + 12 + z64_offset != end_offset - 20) {
    r.fail({}, "bytes between the ZIP64 end record and its locator",
           fmt::format("the record to end at {}", end_offset - 20),
           fmt::format("a record ending at {}", z.u64(4) + 12 + z64_offset));
    return false;
  }
  return adopt_zip64_fields(r, z, z64_offset, d);
}

// One disk holding every entry: wheels are never split, and readers of split archives differ.
bool check_single_disk(ZipReader& r, const Directory& d) {
  if (d.disk != 0 || d.cd_disk != 0 || d.count_disk != d.count) {
    r.fail(
        {}, "multi-disk archive", "disk 0 holding every entry",
        fmt::format("disk {}, directory on disk {}, {} of {} entries here", d.disk, d.cd_disk, d.count_disk, d.count));
    return false;
  }
  return true;
}

// The central directory ends exactly where the (ZIP64) end record starts: readers that locate
// it from the end and readers that trust its recorded offset must find the same bytes. Says
// why not: bytes put in front of the archive, a second end record, or a directory of the
// wrong size or place.
bool check_directory_position(ZipReader& r, const Directory& d) {
  if (d.offset > d.end_limit || d.size != d.end_limit - d.offset) {
    // A directory found whole just before the end record, only later than recorded: bytes
    // were put in front of the archive (a self-extractor stub, a concatenation).
    std::vector<uint8_t> moved;
    if (d.size <= d.end_limit && d.end_limit - d.size > d.offset && r.read(d.end_limit - d.size, moved, 4) &&
        ByteView(moved).u32(0) == kCentralSig) {
      r.fail({}, "bytes before the first local header", "the archive to start at offset 0",
             fmt::format("{} bytes in front of it", d.end_limit - d.size - d.offset));
      return false;
    }
    std::vector<uint8_t> between;
    bool extra_end = d.offset + d.size < d.end_limit &&
                     r.read(d.offset + d.size, between, d.end_limit - d.offset - d.size) &&
                     ByteView(between).find_u32(kEndSig);
    r.fail(
        {},
        extra_end ? "more than one end of central directory record" : "central directory does not reach the end record",
        fmt::format("directory of {} bytes ending at {}", d.size, d.end_limit),
        fmt::format("{} bytes at offset {}", d.size, d.offset));
    return false;
  }
  return true;
}

// One central directory entry from its fixed header `h`, name and extra field: the ZIP64 extra
// field must hold exactly the values marked 0xffffffff and no extra field may rename the member
// for some readers (apply_extra), and the entry must be on disk 0.
}  // namespace

std::string_view NameStore::add(std::string_view name) {
  if (name.empty()) return {};
  if (name.size() > left_) {  // a new chunk; the last one's tail stays unused
    last_size_ = std::max<size_t>(name.size(), 64 << 10);
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(last_size_));
    left_ = last_size_;
  }
  char* at = chunks_.back().get() + (last_size_ - left_);
  std::memcpy(at, name.data(), name.size());
  left_ -= name.size();
  return {at, name.size()};
}

namespace {

ZipEntry parse_central_entry(ZipReader& r, ByteView h, ByteView name, ByteView extra) {
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
  e.name = r.zip.names->add(name.text());
  Zip64Needs needs{e.uncompressed_size == 0xFFFFFFFF, e.compressed_size == 0xFFFFFFFF,
                   e.local_header_offset == 0xFFFFFFFF, h.u16(34) == 0xFFFF};
  bool had_zip64 = false;
  std::string err =
      apply_extra(extra, needs, e.uncompressed_size, e.compressed_size, &e.local_header_offset, had_zip64);
  if (!err.empty()) r.fail(e.name, "central directory: " + err);
  if (h.u16(34) != 0 && h.u16(34) != 0xFFFF)
    r.fail(e.name, "multi-disk archive", "disk 0", fmt::format("disk {}", h.u16(34)));
  return e;
}

// Reads the central directory into r.zip.entries through the reader's window (an entry, at most
// 46 + 3 x 65,535 bytes, is read whole): back-to-back entries filling it exactly, as many as the
// end record counts. Returns false where the directory cannot be walked; other problems are
// only added.
bool read_central_directory(ZipReader& r, const Directory& d) {
  std::vector<uint8_t> entry;
  r.zip.entries.reserve(std::min<uint64_t>(d.count, d.size / kCentralSize));  // bounded by the directory's size
  uint64_t pos = 0;
  while (pos < d.size) {
    if (d.size - pos < kCentralSize) {
      r.fail({}, "malformed central directory",
             "a central directory header at offset " + std::to_string(d.offset + pos),
             fmt::format("{} trailing bytes", d.size - pos));
      return false;
    }
    if (!r.read(d.offset + pos, entry, kCentralSize)) {
      r.fail({}, "truncated central directory");
      return false;
    }
    if (ByteView(entry).u32(0) != kCentralSig) {
      r.fail({}, "malformed central directory",
             "a central directory header at offset " + std::to_string(d.offset + pos), "other bytes");
      return false;
    }
    ByteView h(entry);
    const size_t name_len = h.u16(28), extra_len = h.u16(30), comment_len = h.u16(32);
    const uint64_t entry_len = kCentralSize + name_len + extra_len + comment_len;
    if (d.size - pos < entry_len) {
      r.fail({}, "truncated central directory entry");
      return false;
    }
    if (!r.read(d.offset + pos, entry, static_cast<size_t>(kCentralSize + name_len + extra_len))) {
      r.fail({}, "truncated central directory");
      return false;
    }
    ByteView dir(entry);
    r.zip.entries.push_back(parse_central_entry(r, dir.sub(0, kCentralSize), dir.sub(kCentralSize, name_len),
                                                dir.sub(kCentralSize + name_len, extra_len)));
    pos += entry_len;
  }
  if (r.zip.entries.size() != d.count) {
    r.fail({}, "entry count mismatch", fmt::format("{} {} (end record)", d.count, d.count == 1 ? "entry" : "entries"),
           fmt::format("{} {} in the central directory", r.zip.entries.size(),
                       r.zip.entries.size() == 1 ? "entry" : "entries"));
  }
  return true;
}

// An entry's central fields that every reader must read alike: no encryption, only the flag
// bits wheel writers set, a version needed no higher than 4.5, stored or deflate (stored with
// equal sizes), a safe name, non-ASCII names flagged UTF-8. Returns false where the entry is
// not worth checking further.
bool check_entry_fields(ZipReader& r, const ZipEntry& e) {
  if (e.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders)) {
    r.fail(e.name, "encrypted entry", "no encryption", fmt::format("flags {:#06x}", e.flags));
    return false;
  }
  if (e.flags & ~kFlagsAllowed) {
    r.fail(e.name, "general-purpose flag bits that readers treat differently",
           fmt::format("only bits 1, 2, 3 and 11 ({:#06x})", kFlagsAllowed), fmt::format("flags {:#06x}", e.flags));
    return false;
  }
  if ((e.version_needed & 0xFF) > kMaxVersionNeeded) {
    r.fail(e.name, "version needed to extract is beyond what wheel consumers support",
           fmt::format("at most {}.{}", kMaxVersionNeeded / 10, kMaxVersionNeeded % 10),
           fmt::format("{}.{}", (e.version_needed & 0xFF) / 10, (e.version_needed & 0xFF) % 10));
    return false;
  }
  if (e.method != kMethodStored && e.method != kMethodDeflate) {
    r.fail(e.name, "unsupported compression method", "0 (stored) or 8 (deflate)", std::to_string(e.method));
    return false;
  }
  if (e.method == kMethodStored && e.compressed_size != e.uncompressed_size) {
    r.fail(e.name, "stored entry with differing sizes",
           fmt::format("compressed size = uncompressed size {}", e.uncompressed_size),
           fmt::format("a compressed size of {}", e.compressed_size));
  }
  if (std::string why = unsafe_name_reason(e.name); !why.empty()) {
    r.fail(e.name, "unsafe member name", "a relative path of safe UTF-8 segments", why);
    return false;
  }
  if (!(e.flags & kFlagUtf8) && !is_ascii(e.name)) {
    r.fail(e.name, "non-ASCII name without the UTF-8 flag (bit 11)",
           "the UTF-8 flag, as readers otherwise decode the name as code page 437", "no UTF-8 flag");
    return false;
  }
  return true;
}

// An entry's attributes: a regular file or directory as its name says, exec bits only with a
// file type, and no data in a directory, as unpackers that honour the mode (unzip) and those
// that do not (pip, installer) must make the same thing of it.
void check_entry_type(ZipReader& r, const ZipEntry& e) {
  // The Unix mode, where a writer put one (every host's writers may): pip and installer read
  // it whatever the "made by" host says, and unzip restores links and devices from it.
  uint32_t type = (e.external_attributes >> 16) & S_IFMT;
  if (!(type == 0 || type == S_IFREG || (type == S_IFDIR && e.is_directory()))) {
    r.fail(e.name, "not a regular file", e.is_directory() ? "a directory" : "a regular file",
           type == S_IFLNK   ? "a symbolic link"
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
    r.fail(e.name, "directory entry with data", "0 bytes", fmt::format("{} bytes", e.uncompressed_size));
  }
}

// What a local header (or its data descriptor) says of its member's data.
struct LocalFields {
  uint32_t crc;
  uint64_t compressed, uncompressed;
};

// A field on which the local header says other than the central directory.
void local_mismatch(ZipReader& r, const ZipEntry& e, const char* field, const std::string& central,
                    const std::string& local) {
  r.fail(e.name, fmt::format("local header and central directory disagree on the {}", field),
         central + " (central directory)", local + " (local header)");
}

// The data descriptor after an entry's data (flag bit 3), whose fields stand for the local
// header's (which may be zero there); sizes of 8 bytes where the local header has a ZIP64
// field. Reads them into `f` and moves `data_end` past the descriptor.
bool read_data_descriptor(ZipReader& r, const ZipEntry& e, bool local_zip64, uint64_t& data_end, LocalFields& f) {
  std::vector<uint8_t> dd;
  size_t field = local_zip64 ? 8 : 4;
  if (!r.read(data_end, dd, 4 + 4 + 2 * field)) {
    r.fail(e.name, "truncated data descriptor");
    return false;
  }
  ByteView d(dd);
  size_t p = d.u32(0) == kDescriptorSig ? 4 : 0;
  f.crc = d.u32(p);
  f.compressed = field == 8 ? d.u64(p + 4) : d.u32(p + 4);
  f.uncompressed = field == 8 ? d.u64(p + 4 + field) : d.u32(p + 4 + field);
  data_end += p + 4 + 2 * field;
  return true;
}

// An entry's local header against its central record: present where the directory says, a
// version needed no higher than 4.5, a well-formed extra field, and the same name, flags,
// method, CRC-32 and sizes (from the data descriptor where there is one), with the data inside
// the file; readers that walk local headers must find what the directory lists. Sets the
// entry's data offset; returns the bytes the entry covers, or nothing where it cannot be read.
std::optional<Span> check_local_header(ZipReader& r, ZipEntry& e) {
  std::vector<uint8_t> lh;
  if (!r.read(e.local_header_offset, lh, kLocalSize) || ByteView(lh).u32(0) != kLocalSig) {
    r.fail(e.name, "entry has no local header", "a local header at offset " + std::to_string(e.local_header_offset),
           "other bytes");
    return std::nullopt;
  }
  ByteView l(lh);
  size_t lname_len = l.u16(26), lextra_len = l.u16(28);
  std::vector<uint8_t> var;
  if (!r.read(e.local_header_offset + kLocalSize, var, lname_len + lextra_len)) {
    r.fail(e.name, "truncated local header");
    return std::nullopt;
  }
  ByteView lv(var);
  std::string lname = lv.sub(0, lname_len).str();
  uint16_t lflags = l.u16(6), lmethod = l.u16(8);
  if ((l.u16(4) & 0xFF) > kMaxVersionNeeded)
    r.fail(e.name, "local header: version needed to extract is beyond what wheel consumers support",
           fmt::format("at most {}.{}", kMaxVersionNeeded / 10, kMaxVersionNeeded % 10),
           fmt::format("{}.{}", (l.u16(4) & 0xFF) / 10, (l.u16(4) & 0xFF) % 10));
  LocalFields f{l.u32(14), l.u32(18), l.u32(22)};
  bool local_zip64 = false;
  std::string err =
      apply_extra(lv.sub(lname_len, lextra_len), Zip64Needs{f.uncompressed == 0xFFFFFFFF, f.compressed == 0xFFFFFFFF},
                  f.uncompressed, f.compressed, nullptr, local_zip64);
  if (!err.empty()) r.fail(e.name, "local header: " + err);
  if (lname != e.name) local_mismatch(r, e, "name", std::string(e.name), lname);
  if (lflags != e.flags) local_mismatch(r, e, "flags", hex32(e.flags), hex32(lflags));
  if (lmethod != e.method)
    local_mismatch(r, e, "compression method", std::to_string(e.method), std::to_string(lmethod));
  e.data_offset = e.local_header_offset + kLocalSize + lname_len + lextra_len;
  uint64_t data_end = e.data_offset + e.compressed_size;
  if (data_end < e.data_offset || data_end > r.zip.size) {
    r.fail(e.name, "entry data runs past the end of the file",
           fmt::format("{} bytes at offset {}", e.compressed_size, e.data_offset),
           fmt::format("a file of {} bytes", r.zip.size));
    return std::nullopt;
  }
  // A data descriptor follows the data; the local header's own fields may be zero.
  if ((e.flags & kFlagDescriptor) && !read_data_descriptor(r, e, local_zip64, data_end, f)) return std::nullopt;
  if (f.crc != e.crc32) local_mismatch(r, e, "CRC-32", hex32(e.crc32), hex32(f.crc));
  if (f.compressed != e.compressed_size)
    local_mismatch(r, e, "compressed size", std::to_string(e.compressed_size), std::to_string(f.compressed));
  if (f.uncompressed != e.uncompressed_size)
    local_mismatch(r, e, "uncompressed size", std::to_string(e.uncompressed_size), std::to_string(f.uncompressed));
  return Span{e.local_header_offset, data_end};
}

// Each entry in directory order: its central fields, its type, then its local header. Returns
// the span of each entry whose local header could be read.
std::vector<Span> check_entries(ZipReader& r) {
  std::vector<Span> spans;  // [local header, end of data) per entry
  for (ZipEntry& e : r.zip.entries) {
    if (!check_entry_fields(r, e)) continue;
    check_entry_type(r, e);
    if (std::optional<Span> span = check_local_header(r, e)) spans.push_back(*span);
  }
  return spans;
}

// Entries must tile the file from offset 0 to the central directory with nothing between:
// bytes no entry covers can hide a local header (or another archive) that a reader walking
// local headers would take for a member.
bool check_tiling(ZipReader& r, std::vector<Span> spans, uint64_t cd_offset) {
  std::sort(spans.begin(), spans.end());
  uint64_t expected = 0;
  for (auto [start, stop] : spans) {
    if (start != expected) {
      std::vector<uint8_t> probe;
      bool hidden = start > expected && r.read(expected, probe, 4) && ByteView(probe).u32(0) == kLocalSig;
      r.fail({},
             start < expected ? "overlapping entries"
             : hidden         ? "local header not listed in the central directory"
             : expected == 0  ? "bytes before the first local header"
                              : "bytes between entries",
             fmt::format("an entry at offset {}", expected), fmt::format("the next entry at offset {}", start));
      return false;
    }
    expected = stop;
  }
  if (expected != cd_offset) {
    r.fail({},
           expected < cd_offset ? "bytes between the last entry and the central directory"
                                : "entries overlap the central directory",
           fmt::format("the central directory at offset {}", expected),
           fmt::format("the central directory at offset {}", cd_offset));
    return false;
  }
  return true;
}

}  // namespace

std::optional<ZipArchive> read_zip(const std::string& path, const std::string& display_name, Problems& problems) {
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
  ZipReader r{zip, problems, display_name, {}, 0};
  const size_t before = problems.size();

  // The end records, which say where the central directory is.
  std::optional<EndRecord> end = find_end_record(r);
  if (!end || !check_end_record(r, end->bytes())) return std::nullopt;
  Directory dir = classic_directory(end->bytes(), end->offset);
  if (!apply_zip64_end(r, end->offset, dir) || !check_single_disk(r, dir) || !check_directory_position(r, dir))
    return std::nullopt;
  // The central directory, then each entry and its local header, then the names together.
  if (!read_central_directory(r, dir) || problems.size() != before) return std::nullopt;
  std::vector<Span> spans = check_entries(r);
  if (problems.size() != before) return std::nullopt;
  check_names(zip, r);
  if (problems.size() != before) return std::nullopt;
  // The members and headers cover the file.
  if (!check_tiling(r, std::move(spans), dir.offset)) return std::nullopt;
  return zip;
}

}  // namespace wm
