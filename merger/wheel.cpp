#include "merger/wheel.hpp"

#include "merger/base/bytes.hpp"
#include "merger/base/digest.hpp"
#include "merger/base/interrupt.hpp"
#include "merger/base/parallel.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/record.hpp"
#include "merger/format/variant_metadata.hpp"
#include "merger/zip/member_stream.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace wm {

namespace {

// RECORD rows beyond one per member are errors, but parsed up to a few, so the message can name
// the row that lists an absent file.
constexpr size_t kRecordSlack = 1024;

// Core metadata fields that may appear once; readers disagree about which of several to use.
bool single_use_field(std::string_view key) {
  static constexpr std::string_view kSingle[] = {"Metadata-Version", "Name",         "Version",
                                                 "Summary",          "Description",  "Description-Content-Type",
                                                 "Keywords",         "Home-page",    "Download-URL",
                                                 "Author",           "Author-email", "Maintainer",
                                                 "Maintainer-email", "License",      "License-Expression",
                                                 "Requires-Python"};
  return std::any_of(std::begin(kSingle), std::end(kSingle), [&](std::string_view k) { return iequals(k, key); });
}

std::string_view top_dir(std::string_view path) {
  size_t slash = path.find('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// What streaming one member found; the sha256 and ELF information go into the WheelFile.
struct MemberResult {
  std::optional<Problem> problem;
  Sha256 sha256{};
  std::vector<uint8_t> record_digest;  // when RECORD uses another algorithm than sha256
  bool elf = false;
  bool pe = false;
  std::optional<ElfInfo> elf_info;
  std::optional<NativeMachines> machines;  // a PE image's or Mach-O file's
  std::optional<std::string> text;         // the content, when asked for and kept for the planner
  std::optional<GpuCodeScan> gpu_code;     // where it has any, or could not be read
};

bool is_init_file(std::string_view path) { return path == "__init__.py" || path.ends_with("/__init__.py"); }

MemberResult verify_member(const Wheel& w, const ZipEntry& entry, RecordAlgorithm algorithm, bool keep_text);

// verify_member, with anything it throws (memory exhausted, above all) turned into a problem
// naming the input and member, as it runs on a worker thread.
MemberResult verify_member_safely(const Wheel& w, const ZipEntry& entry, RecordAlgorithm algorithm, bool keep_text) {
  try {
    return verify_member(w, entry, algorithm, keep_text);
  } catch (const std::exception& error) {
    MemberResult result;
    result.problem =
        Problem{ProblemKind::other, w.display, std::string(entry.name), "cannot read the member", {}, error.what()};
    return result;
  }
}

// The bytes of `ranges` of a member, read in one more pass up to the end of the last.
std::vector<std::vector<uint8_t>> fetch_ranges(const Wheel& w, const ZipEntry& entry,
                                               const std::vector<ByteRange>& ranges) {
  std::vector<std::vector<uint8_t>> fetched(ranges.size());
  uint64_t end = 0;
  for (const ByteRange& range : ranges) end = std::max(end, range.offset + range.size);
  if (end == 0) return fetched;
  uint64_t pos = 0;
  stream_member(
      w.zip, entry,
      [&](std::span<const uint8_t> chunk) {
        for (size_t i = 0; i < ranges.size(); ++i) {
          const uint64_t lo = std::max(pos, ranges[i].offset);
          const uint64_t hi = std::min(pos + chunk.size(), ranges[i].offset + ranges[i].size);
          if (lo < hi) fetched[i].insert(fetched[i].end(), chunk.begin() + (lo - pos), chunk.begin() + (hi - pos));
        }
        pos += chunk.size();
        return pos < end;
      },
      w.display,
      [&] {
        pos = 0;
        for (auto& f : fetched) f.clear();
      });
  return fetched;
}

// What the scanner's kept prefix lacks of an ELF member (a large library's string table, its
// version needs), read in one more pass.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> fetch_missing(const Wheel& w, const ZipEntry& entry,
                                                                    const ElfScanner& elf) {
  const std::optional<ByteRange> ranges[] = {elf.missing_strings(), elf.missing_versions()};
  auto fetched = fetch_ranges(w, entry, {ranges[0].value_or(ByteRange{}), ranges[1].value_or(ByteRange{})});
  return {std::move(fetched[0]), std::move(fetched[1])};
}

// The DLLs a PE image imports, with the ranges its pass did not keep read in at most two more
// passes (the import directory, then the names); where they cannot be read, why.
void read_pe_imports(const Wheel& w, const ZipEntry& entry, PeImportScanner& scanner, NativeMachines& machines) {
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<ByteRange> missing = scanner.missing();
    if (missing.empty()) break;
    auto fetched = fetch_ranges(w, entry, missing);
    for (size_t i = 0; i < missing.size(); ++i) scanner.add(missing[i], std::move(fetched[i]));
  }
  std::string why;
  if (auto imports = scanner.imports(why))
    machines.imports = std::move(*imports);
  else
    machines.imports_unreadable = why;
}

MemberResult verify_member(const Wheel& w, const ZipEntry& entry, RecordAlgorithm algorithm, bool keep_text) {
  MemberResult result;
  Digest sha = Digest::sha256();
  std::optional<Digest> other;
  if (algorithm != RecordAlgorithm::sha256) other = Digest::of(algorithm);
  std::optional<ElfScanner> elf;
  std::optional<GpuCodeScanner> gpu;
  std::optional<PeImportScanner> pe;
  const bool fatbin_name = entry.name.ends_with(".fatbin");
  bool first = true;
  if (keep_text) result.text.emplace();  // bounded: streaming stops at the declared size
  result.problem = stream_member(
      w.zip, entry,
      [&](std::span<const uint8_t> chunk) {
        if (first && ElfScanner::has_magic(chunk)) elf.emplace();
        if (first) {
          gpu = GpuCodeScanner::start(chunk, entry.uncompressed_size, fatbin_name);
          result.pe = is_pe_image(chunk);
          if (auto machine = pe_machine(chunk)) {
            result.machines = NativeMachines{false, {*machine}, {}, {}};
            pe.emplace(entry.uncompressed_size);
          } else if (auto cpus = macho_cpu_types(chunk))
            result.machines = NativeMachines{true, std::move(*cpus), {}, {}};
        }
        first = false;
        if (result.text) result.text->append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
        sha.update(chunk);
        if (other) other->update(chunk);
        if (elf) elf->feed(chunk);
        if (gpu) gpu->feed(chunk);
        if (pe) pe->feed(chunk);
        return true;
      },
      w.display,
      [&] {
        sha = Digest::sha256();
        if (other) other = Digest::of(algorithm);
        elf.reset();
        gpu.reset();
        pe.reset();
        result.machines.reset();
        first = true;
        if (result.text) result.text->clear();
      });
  if (result.problem) return result;
  result.sha256 = sha.finish_sha256();
  if (other) result.record_digest = other->finish();
  if (pe) read_pe_imports(w, entry, *pe, *result.machines);
  if (gpu) {
    result.gpu_code = gpu->finish(w.zip, entry, w.display, result.problem);
    if (result.problem) return result;
    if (result.gpu_code->code.empty() && result.gpu_code->unreadable.empty()) result.gpu_code.reset();
  }
  if (elf) {
    result.elf = true;
    const auto [strings, versions] = fetch_missing(w, entry, *elf);
    std::string beyond_limits;
    result.elf_info = elf->finish(strings, &beyond_limits, versions);
    // One whose dynamic section cannot be read still says what machine it is for.
    if (!result.elf_info && beyond_limits.empty()) {
      if (auto header = elf->header()) {
        result.elf_info.emplace();
        result.elf_info->header = *header;
        result.elf_info->linkage_read = false;
        result.elf_info->versions_read = false;
      }
    }
    if (!beyond_limits.empty())
      result.problem =
          Problem{ProblemKind::invalid_input,
                  w.display,
                  std::string(entry.name),
                  "ELF file beyond wheelmerge's limits",
                  fmt::format("at most {} DT_NEEDED entries, {} symbol versions needed and names of at most {} bytes",
                              kMaxElfNeeded, kMaxElfVersionNeeds, kMaxElfNameBytes),
                  beyond_limits};
  }
  return result;
}

// The wheel being read, and the caller's problems, which every check below adds to.
struct WheelReader {
  Wheel w;
  Problems& problems;
  size_t before;  // problems.size() when reading began

  WheelReader(const std::string& path, std::optional<VariantLabel> label, Problems& problems_) : problems(problems_) {
    w.path = path;
    w.display = std::filesystem::path(path).filename().string();
    w.label = std::move(label);
    before = problems.size();
  }
  void fail(std::string_view member, std::string what, std::string expected = {}, std::string found = {}) {
    problems.push_back({ProblemKind::invalid_input, w.display, std::string(member), std::move(what),
                        std::move(expected), std::move(found)});
  }
  bool failed() const { return problems.size() != before; }
  std::string record_path() const { return w.dist_info + "/RECORD"; }
};

// Name and archive: the file name parses as a wheel's and the file reads as a zip archive.
bool read_name_and_archive(WheelReader& r) {
  std::string why;
  auto name = parse_wheel_filename(r.w.display, why);
  if (!name) {
    r.fail({}, "not a wheel file name", "{name}-{version}[-{build}]-{python}-{abi}-{platform}.whl", why);
    return false;
  }
  r.w.name = *name;
  auto zip = read_zip(r.w.path, r.w.display, r.problems);
  if (!zip) return false;
  r.w.zip = std::move(*zip);
  return true;
}

// Layout: exactly one .dist-info directory and at most one .data directory, both named for the
// wheel, and no top-level file named like either. False only when there is not exactly one
// dist-info directory to go on with; the other findings are problems and reading goes on.
bool check_layout(WheelReader& r) {
  Wheel& w = r.w;
  std::set<std::string> dist_infos, datas;
  for (const ZipEntry& e : w.zip.entries) {
    std::string top(top_dir(e.name));
    if (top.ends_with(".dist-info")) dist_infos.insert(top);
    if (top.ends_with(".data")) datas.insert(top);
    if (top.empty() && (e.name.ends_with(".dist-info") || e.name.ends_with(".data")))
      r.fail(e.name, "top-level file named like a .dist-info or .data directory",
             "such names only for the wheel's own directories", "a file");
  }
  if (dist_infos.size() != 1) {
    r.fail({}, "wrong number of .dist-info directories", "exactly one",
           dist_infos.empty() ? "none" : fmt::format("{}", fmt::join(dist_infos, ", ")));
    return false;
  }
  w.dist_info = *dist_infos.begin();
  const std::string expected_stem = normalize_name(w.name.name) + "-" + w.name.version;
  auto stem_matches = [&](const std::string& dir, std::string_view ext) {
    std::string stem = dir.substr(0, dir.size() - ext.size());
    size_t dash = stem.find('-');
    return dash != std::string::npos && normalize_name(stem.substr(0, dash)) + stem.substr(dash) == expected_stem;
  };
  if (!stem_matches(w.dist_info, ".dist-info"))
    r.fail(w.dist_info + "/", "dist-info directory not named for the wheel", expected_stem + ".dist-info", w.dist_info);
  if (datas.size() > 1)
    r.fail({}, "several .data directories", "at most one", fmt::format("{}", fmt::join(datas, ", ")));
  if (datas.size() == 1) {
    w.data_dir = *datas.begin();
    if (!stem_matches(w.data_dir, ".data"))
      r.fail(w.data_dir + "/", "data directory not named for the wheel", expected_stem + ".data", w.data_dir);
  }
  return true;
}

// Files: every regular member into w.files (directories carry nothing a wheel needs), each
// .data member under a known key, no installer-written file in the dist-info directory.
void list_files(WheelReader& r) {
  Wheel& w = r.w;
  w.files.reserve(w.zip.entries.size());
  for (size_t i = 0; i < w.zip.entries.size(); ++i) {
    const ZipEntry& e = w.zip.entries[i];
    if (e.is_directory()) continue;
    WheelFile f;
    f.entry = i;
    f.path = e.name;
    f.size = e.uncompressed_size;
    f.executable = e.executable();
    if (!w.data_dir.empty() && top_dir(f.path) == w.data_dir) {
      std::string rest(f.path.substr(w.data_dir.size() + 1));
      std::string key = rest.substr(0, rest.find('/'));
      static const std::set<std::string> kKeys = {"purelib", "platlib", "headers", "scripts", "data"};
      if (rest.find('/') == std::string::npos || !kKeys.count(key))
        r.fail(f.path, "unknown .data directory key", "purelib, platlib, headers, scripts or data", key);
    }
    if (top_dir(f.path) == w.dist_info) {
      std::string rel(f.path.substr(w.dist_info.size() + 1));
      if (is_installer_file(rel))
        r.fail(f.path, "installer-written file inside the wheel", "no INSTALLER, REQUESTED or direct_url.json", rel);
    }
    w.files.push_back(std::move(f));
  }
  w.build_index();
}

// Installed paths: no two members bound for one path. Where an installer puts each member: the
// root, purelib and platlib into site-packages; scripts into the scripts directory, which is the
// data scheme's "bin/" on POSIX; data into the prefix; headers into their own directory. Two
// members bound for one path (or a file where another needs a directory), after case folding,
// make installers overwrite or fail depending on their order: `.data/platlib/pkg/mod.py` beside
// `pkg/mod.py`, `.data/data/bin/tool` beside `.data/scripts/tool`.
// A wheel for Windows holds only names Windows creates as written: pip and installer would
// otherwise write a member elsewhere than RECORD says (a stream of another file, a name without
// its trailing dot) or open a device.
void check_windows_names(WheelReader& r) {
  const auto& platforms = r.w.name.platform;
  if (std::none_of(platforms.begin(), platforms.end(), [](const std::string& p) { return p.starts_with("win"); }))
    return;
  for (const ZipEntry& e : r.w.zip.entries)
    if (std::string why = windows_name_reason(e.name); !why.empty())
      r.fail(e.name, "member name Windows cannot create",
             "a name Windows writes as it is (the wheel is for " + fmt::format("{}", fmt::join(platforms, ", ")) + ")",
             why);
}

void check_installed_paths(WheelReader& r) {
  const Wheel& w = r.w;
  if (w.data_dir.empty()) return;
  std::vector<std::string> installed;
  std::vector<std::string_view> members;
  for (const WheelFile& f : w.files) {
    std::string_view path = f.path;
    std::string target;  // the dist-info installs into site-packages too
    if (top_dir(f.path) != w.data_dir) {
      target = "site-packages/" + std::string(f.path);
    } else {
      std::string_view rest = path.substr(w.data_dir.size() + 1);
      if (rest.find('/') == std::string_view::npos) continue;  // refused as an unknown key
      std::string_view key = rest.substr(0, rest.find('/'));
      std::string_view under = rest.substr(key.size() + 1);
      if (key == "purelib" || key == "platlib")
        target = "site-packages/" + std::string(under);
      else if (key == "scripts")
        target = "prefix/bin/" + std::string(under);
      else if (key == "data")
        target = "prefix/" + std::string(under);
      else
        target = "headers/" + std::string(under);
    }
    installed.push_back(std::move(target));
    members.push_back(f.path);
  }
  for (const NameClash& clash : find_name_clashes(installed)) {
    const std::string_view member = members[clash.name];
    const std::string other(members[clash.other]);
    if (clash.kind == NameClash::Kind::file_and_directory)
      r.fail(member, "installs where another member needs a directory", "one kind of entry per installed path",
             "another member, " + other);
    else
      r.fail(member, "installs onto the same path as another member", "one member per installed path",
             "another member, " + other);
  }
}

// One dist-info file as text: present, within `limit` bytes, UTF-8 without a BOM and without
// NUL, as Python's readers of these files (email parser, csv) would otherwise see another first
// field name or row than we do.
std::optional<std::string> read_dist_info_text(WheelReader& r, const std::string& rel, size_t limit) {
  const Wheel& w = r.w;
  std::string path = w.dist_info + "/" + rel;
  const WheelFile* f = w.find(path);
  if (!f) {
    r.fail(path, "missing", "a " + rel + " file in " + w.dist_info, "none");
    return std::nullopt;
  }
  auto read = read_member(w.zip, w.zip.entries[f->entry], limit, w.display, r.problems);
  if (!read) return std::nullopt;
  std::string text = std::move(*read);
  if (text.starts_with("\xef\xbb\xbf")) {
    r.fail(path, rel + " starts with a byte order mark", "UTF-8 without a BOM", "EF BB BF");
    return std::nullopt;
  }
  if (!is_valid_utf8(text) || text.find('\0') != std::string::npos) {
    r.fail(path, rel + " is not UTF-8 text", "UTF-8", "other bytes");
    return std::nullopt;
  }
  return text;
}

struct DistInfoTexts {
  std::string record, wheel, metadata;
};

// Dist-info texts: RECORD, WHEEL and METADATA, all three read (each within its limit) so that
// every one that cannot be is reported; nullopt when any cannot.
std::optional<DistInfoTexts> read_dist_info_texts(WheelReader& r) {
  auto record = read_dist_info_text(r, "RECORD", kMaxRecordFile);
  auto wheel = read_dist_info_text(r, "WHEEL", kMaxWheelFile);
  auto metadata = read_dist_info_text(r, "METADATA", kMaxMetadataFile);
  if (!record || !wheel || !metadata) return std::nullopt;
  return DistInfoTexts{std::move(*record), std::move(*wheel), std::move(*metadata)};
}

// WHEEL: Wheel-Version 1.x, Root-Is-Purelib true or false, Build as in the file name. Tag lines
// that differ from the file name's only warn: installers go by the file name's tags (CuPy's
// wheels say linux_x86_64 in WHEEL under a manylinux2014 file name), and every output's WHEEL
// is written from file names.
void check_wheel_file(WheelReader& r, const std::string& text) {
  Wheel& w = r.w;
  const std::string wheel_member = w.dist_info + "/WHEEL";
  auto fields = parse_headers(text, w.display, wheel_member, r.problems);
  if (!fields) return;
  w.wheel_fields = *fields;
  auto version = w.wheel_fields.one("Wheel-Version");
  if (!version || version->substr(0, version->find('.')) != "1")
    r.fail(wheel_member, "unsupported Wheel-Version", "1.x", version.value_or("no Wheel-Version field"));
  auto purelib = w.wheel_fields.one("Root-Is-Purelib");
  if (!purelib || (*purelib != "true" && *purelib != "false"))
    r.fail(wheel_member, "Root-Is-Purelib missing or invalid", "true or false",
           purelib.value_or("no Root-Is-Purelib field"));
  std::vector<std::string> tags = w.wheel_fields.all("Tag");
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  if (tags != w.name.expanded_tags())
    w.warnings.push_back(
        fmt::format("{}: {}: Tag lines ({}) differ from the file name's tags ({}); the file name's are used", w.display,
                    wheel_member, tags.empty() ? "none" : fmt::format("{}", fmt::join(tags, ", ")),
                    fmt::format("{}", fmt::join(w.name.expanded_tags(), ", "))));
  auto build = w.wheel_fields.one("Build");
  if (build.value_or("") != w.name.build)
    r.fail(wheel_member, "Build does not match the file name's build tag",
           w.name.build.empty() ? "no Build line" : w.name.build, build.value_or("no Build line"));
}

// METADATA's single-use fields: each at most once, reported once, at its second use.
void check_single_use_fields(WheelReader& r, const std::string& metadata_member) {
  const Wheel& w = r.w;
  std::map<std::string, size_t> seen;  // single-use field (lower case) -> times seen
  for (const Header& h : w.metadata.fields) {
    std::string key = h.key;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    if (single_use_field(h.key) && ++seen[key] == 2)
      r.fail(metadata_member, fmt::format("METADATA field {} appears more than once", h.key), "once",
             fmt::format("{} values", w.metadata.all(h.key).size()));
  }
}

// METADATA's Requires-Dist: each parses as pip parses it, as the merge rebuilds requirements
// from the parse; a signal stops the loop with an "interrupted" problem.
void parse_requires_dist(WheelReader& r, const std::string& metadata_member) {
  Wheel& w = r.w;
  size_t line = 0;
  for (const std::string& text : w.metadata.all("Requires-Dist")) {
    ++line;
    if (int signal = interrupted()) {
      r.problems.push_back(interruption(r.w.display, metadata_member, signal));
      break;
    }
    std::string error;
    auto requirement = parse_requirement(text, error);
    if (!requirement) {
      r.fail(metadata_member, fmt::format("Requires-Dist {} is not a valid requirement ({})", line, error),
             "a PEP 508 requirement", text);
      continue;
    }
    w.requires_dist.push_back(std::move(*requirement));
  }
}

// METADATA: single-use fields once, every Requires-Dist a valid requirement, Name and Version
// those of the file name.
void check_metadata(WheelReader& r, const std::string& text) {
  Wheel& w = r.w;
  const std::string metadata_member = w.dist_info + "/METADATA";
  auto fields = parse_headers(text, w.display, metadata_member, r.problems);
  if (!fields) return;
  w.metadata = *fields;
  check_single_use_fields(r, metadata_member);
  parse_requires_dist(r, metadata_member);
  auto meta_name = w.metadata.one("Name");
  auto meta_version = w.metadata.one("Version");
  if (!meta_name || normalize_name(*meta_name) != normalize_name(w.name.name))
    r.fail(metadata_member, "Name does not match the file name", w.name.name, meta_name.value_or("no Name field"));
  if (!meta_version || *meta_version != w.name.version)
    r.fail(metadata_member, "Version does not match the file name", w.name.version,
           meta_version.value_or("no Version field"));
}

// A variant wheel (PEP 825: a label after the platform tags in its name): its variant.json
// names that label alone, in a form installers read (variant_document_problem).
void check_variant_metadata(WheelReader& r) {
  const std::string& label = r.w.name.variant;
  if (label.empty()) return;
  auto text = read_dist_info_text(r, "variant.json", kMaxVariantFile);
  if (!text) return;
  if (std::string why = variant_document_problem(*text, label); !why.empty())
    // `why` names the place and says what was expected and found there.
    r.fail(r.w.dist_info + "/variant.json",
           fmt::format("invalid variant metadata for the file name's label {}: {}", label, why));
}

// RECORD rows: the CSV parses (at most kRecordSlack rows beyond one per member), every path is
// a safe relative file path, no path has two rows. The rows sorted by path.
// The rows refer to `text`.
RecordRows read_record_rows(WheelReader& r, std::string_view text) {
  const std::string record_path = r.record_path();
  auto parsed = parse_record(text, r.w.display, record_path, r.w.zip.entries.size() + kRecordSlack, r.problems);
  if (!parsed) return {};
  std::vector<RecordRow>& rows = parsed->rows;
  std::erase_if(rows, [&](const RecordRow& row) {
    std::string bad = unsafe_name_reason(row.path);
    if (bad.empty() && row.path.back() != '/') return false;
    r.fail(record_path, "unsafe path in RECORD", "a relative file path",
           std::string(row.path) + (bad.empty() ? " (a directory)" : " (" + bad + ")"));
    return true;
  });
  // Stable: the message names each duplicated path once, as often as it is repeated.
  std::stable_sort(rows.begin(), rows.end(), [](const RecordRow& a, const RecordRow& b) { return a.path < b.path; });
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].path == rows[i - 1].path)
      r.fail(record_path, "duplicate RECORD row", "one row per file", std::string(rows[i].path));
  return std::move(*parsed);
}

// Hashes and sizes against RECORD: every member listed but signature files (dropped, with a
// warning); RECORD's own row without hash or size; every other row with a hash RECORD may use
// (RecordHash::parse: algorithm, digest length) and the member's size; no row for a file the
// archive lacks. Each member's recorded hash, by position in w.files; none for RECORD and
// signature files.
void check_record_entries(WheelReader& r, const RecordRows& rows, OtherDigests& other_digests) {
  Wheel& w = r.w;
  const std::string record_path = r.record_path();
  std::vector<bool> used(rows.size(), false);
  auto row_of = [&](std::string_view path) -> std::optional<size_t> {
    auto it = std::lower_bound(rows.begin(), rows.end(), path,
                               [](const RecordRow& row, std::string_view p) { return row.path < p; });
    if (it == rows.end() || it->path != path) return std::nullopt;
    return static_cast<size_t>(it - rows.begin());
  };
  for (size_t i = 0; i < w.files.size(); ++i) {
    WheelFile& f = w.files[i];
    std::string rel =
        top_dir(f.path) == w.dist_info ? std::string(f.path.substr(w.dist_info.size() + 1)) : std::string();
    auto at = row_of(f.path);
    if (at) used[*at] = true;
    if (is_record_signature(rel)) {
      w.warnings.push_back(
          fmt::format("{}: {}: a signature of RECORD, not checked (deprecated, and not covered by RECORD); "
                      "a merged or variant wheel leaves it out (its RECORD is new)",
                      w.display, f.path));
      continue;
    }
    if (!at) {
      r.fail(f.path, "file not listed in RECORD", "a RECORD row", "none");
      continue;
    }
    const RecordRow& row = rows[*at];
    if (f.path == record_path) {
      if (!row.hash.empty() || !row.size.empty())
        r.fail(record_path, "RECORD's own row carries a hash or size", "RECORD,,",
               fmt::format("{},{},{}", row.path, row.hash, row.size));
      continue;
    }
    std::string what, expected, found;
    auto hash = RecordHash::parse(row.hash, what, expected, found);
    if (!hash) {
      r.fail(f.path, what, expected, found);
    } else if (row.size.empty() || row.size.find_first_not_of("0123456789") != std::string::npos) {
      r.fail(f.path, "RECORD row without a valid size", "a decimal size",
             row.size.empty() ? "an empty field" : std::string(row.size));
    } else if (row.size != std::to_string(f.size)) {
      r.fail(f.path, "size does not match RECORD", std::string(row.size) + " bytes (RECORD)",
             std::to_string(f.size) + " bytes");
    } else {
      f.record_algorithm = hash->id;
      if (f.record_algorithm ==
          RecordAlgorithm::sha256) {  // RECORD's claim, until streaming puts the digest found there
        f.sha256.emplace();
        std::copy(hash->raw.begin(), hash->raw.end(), f.sha256->begin());
      } else {
        other_digests.emplace_back(static_cast<uint32_t>(i), std::move(hash->raw));
      }
    }
  }
  for (size_t k = 0; k < rows.size(); ++k)
    if (!used[k] && rows[k].path != record_path && (k == 0 || rows[k].path != rows[k - 1].path))
      r.fail(record_path, "RECORD lists a file the archive lacks", std::string(rows[k].path), "no such member");
}

// Which members of `w` keep their text for the planner: the __init__.py files, in archive
// order while they fit kMaxInitSources in all (a package whose text was not kept is refused
// only if it needs a loader).
std::vector<bool> init_texts_to_keep(const Wheel& w) {
  std::vector<bool> keep(w.files.size(), false);
  uint64_t kept = 0;
  for (size_t i = 0; i < w.files.size(); ++i) {
    const WheelFile& f = w.files[i];
    if (f.record_algorithm != RecordAlgorithm::none && is_init_file(f.path) && f.size <= kMaxInitSources - kept) {
      keep[i] = true;
      kept += f.size;
    }
  }
  return keep;
}

// Signature files are dropped, so they leave the model here: every file but RECORD that RECORD
// gives no hash for.
void drop_unstreamed_files(Wheel& w) {
  const std::string record_path = w.dist_info + "/RECORD";
  std::erase_if(w.files, [&](const WheelFile& f) {
    return f.record_algorithm == RecordAlgorithm::none && f.path != record_path;
  });
  w.files.shrink_to_fit();
  w.build_index();
}

}  // namespace

std::optional<size_t> Wheel::position(std::string_view p) const {
  auto it = std::lower_bound(index.begin(), index.end(), p,
                             [&](uint32_t i, std::string_view q) { return files[i].path < q; });
  if (it == index.end() || files[*it].path != p) return std::nullopt;
  return *it;
}

const WheelFile* Wheel::find(std::string_view p) const {
  auto at = position(p);
  return at ? &files[*at] : nullptr;
}

void Wheel::release_files() {
  std::vector<WheelFile>().swap(files);
  std::vector<uint32_t>().swap(index);
  std::unordered_map<std::string, std::string>().swap(init_sources);
  native_machines.clear();
  gpu_code.clear();
}

std::vector<std::string> spelled_gpu_code(const Wheel& wheel, std::string_view path) {
  auto it = wheel.gpu_code.find(path);
  if (it == wheel.gpu_code.end() || !it->second.unreadable.empty()) return {};
  return spelled(it->second.code);
}

BuildGpuCode build_gpu_code(const Wheel& wheel) {
  BuildGpuCode out;
  for (const WheelFile& f : wheel.files) {
    auto it = wheel.gpu_code.find(f.path);
    if (it == wheel.gpu_code.end()) continue;
    if (!it->second.unreadable.empty())
      out.unreadable.emplace_back(std::string(f.path), it->second.unreadable);
    else if (!it->second.code.empty())
      out.files.emplace_back(std::string(f.path), it->second.code);
  }
  return out;
}

const VariantLabel& Wheel::build_label() const {
  if (!label) throw std::logic_error(display + " has no variant label, where a merge's inputs all have one");
  return *label;
}

void Wheel::build_index() {
  index.resize(files.size());
  for (size_t i = 0; i < files.size(); ++i) index[i] = static_cast<uint32_t>(i);
  std::sort(index.begin(), index.end(), [&](uint32_t a, uint32_t b) { return files[a].path < files[b].path; });
}

bool is_installer_file(const std::string& rel) {
  return rel == "INSTALLER" || rel == "REQUESTED" || rel == "direct_url.json";
}

bool is_record_signature(const std::string& rel) { return rel == "RECORD.jws" || rel == "RECORD.p7s"; }

std::vector<LabelSource> label_sources(const WheelInput& input) {
  std::vector<LabelSource> found;
  if (!input.label.empty()) {
    LabelSource given{"PATH=LABEL", input.label, std::nullopt, {}};
    given.label = VariantLabel::parse(input.label, given.why);
    found.push_back(std::move(given));
  }
  // Read from the name's text, so a label is found even where the rest of the name is invalid.
  std::string file = std::filesystem::path(input.path).filename().string();
  if (file.size() <= 4 || file.substr(file.size() - 4) != ".whl") return found;
  std::string stem = file.substr(0, file.size() - 4);
  if (size_t dot = stem.rfind('.'); dot != std::string::npos)
    if (auto suffix = VariantLabel::parse(stem.substr(dot + 1)))
      found.push_back({".LABEL suffix", suffix->str(), suffix, {}});
  size_t first = stem.find('-'), second = stem.find('-', first + 1);
  if (first == std::string::npos) return found;
  auto local =
      local_version_label(stem.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1));
  if (local) found.push_back({"+LABEL local version", local->str(), local, {}});
  return found;
}

std::optional<LabelSource> detect_label(const WheelInput& input) {
  std::vector<LabelSource> sources = label_sources(input);
  if (sources.empty()) return std::nullopt;
  return std::move(sources.front());
}

// Streaming: every member with a RECORD hash, of every wheel, read once, in parallel, largest
// first: its CRC and size checked, its sha256 (and RECORD's algorithm's digest) computed and
// compared with RECORD's, ELF files scanned, the text of __init__.py files kept. Each worker
// writes its member's WheelFile; each wheel's problems are reported in archive order.
std::vector<std::optional<Wheel>> stream_wheels(std::vector<OpenedWheel> opened, std::vector<Problems>& problems) {
  struct Item {
    uint32_t wheel, file;
    uint64_t compressed;
  };
  std::vector<Item> order;
  std::vector<std::vector<bool>> keep_text(opened.size());
  for (size_t k = 0; k < opened.size(); ++k) {
    const Wheel& w = opened[k].wheel;
    keep_text[k] = init_texts_to_keep(w);
    for (size_t i = 0; i < w.files.size(); ++i)
      if (w.files[i].record_algorithm != RecordAlgorithm::none)
        order.push_back(
            {static_cast<uint32_t>(k), static_cast<uint32_t>(i), w.zip.entries[w.files[i].entry].compressed_size});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Item& a, const Item& b) { return a.compressed > b.compressed; });
  std::mutex lock;                                             // guards `found` and every wheel's init_sources
  std::vector<std::tuple<uint32_t, uint32_t, Problem>> found;  // wheel, file, problem
  parallel_for(order.size(), [&](size_t n) {
    const Item item = order[n];
    OpenedWheel& o = opened[item.wheel];
    Wheel& w = o.wheel;
    WheelFile& f = w.files[item.file];
    const RecordAlgorithm algorithm = f.record_algorithm;
    MemberResult result = verify_member_safely(w, w.zip.entries[f.entry], algorithm, keep_text[item.wheel][item.file]);
    std::optional<Problem> problem = std::move(result.problem);
    if (!problem) {
      std::span<const uint8_t> expected;
      if (algorithm == RecordAlgorithm::sha256) {
        expected = *f.sha256;
      } else {
        auto it = std::lower_bound(o.other_digests.begin(), o.other_digests.end(), item.file,
                                   [](const auto& d, uint32_t i) { return d.first < i; });
        assert(it != o.other_digests.end() && it->first == item.file);  // check_record_entries put one
        expected = it->second;
      }
      std::span<const uint8_t> actual =
          algorithm == RecordAlgorithm::sha256 ? std::span<const uint8_t>(result.sha256) : result.record_digest;
      if (!std::equal(expected.begin(), expected.end(), actual.begin(), actual.end()))
        problem = Problem{ProblemKind::invalid_input,
                          w.display,
                          std::string(f.path),
                          "hash does not match RECORD",
                          fmt::format("{}={}", record_algorithm_name(algorithm), base64url_nopad(expected)),
                          fmt::format("{}={}", record_algorithm_name(algorithm), base64url_nopad(actual))};
      else
        f.sha256 = result.sha256;
      f.elf = result.elf;
      f.pe = result.pe;
      if (result.elf_info) f.elf_info = std::make_shared<const ElfInfo>(std::move(*result.elf_info));
    }
    if (problem || result.text || result.machines || result.gpu_code) {
      std::lock_guard guard(lock);
      if (problem)
        found.emplace_back(item.wheel, item.file, std::move(*problem));
      else if (result.text)
        w.init_sources.emplace(f.path, std::move(*result.text));
      if (!problem && result.machines) w.native_machines.emplace(std::string(f.path), std::move(*result.machines));
      if (!problem && result.gpu_code) w.gpu_code.emplace(std::string(f.path), std::move(*result.gpu_code));
    }
  });
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::pair(std::get<0>(a), std::get<1>(a)) < std::pair(std::get<0>(b), std::get<1>(b));
  });
  for (auto& [k, i, problem] : found) problems[k].push_back(std::move(problem));
  std::vector<std::optional<Wheel>> wheels(opened.size());
  for (size_t k = 0; k < opened.size(); ++k) {
    if (!problems[k].empty()) continue;
    drop_unstreamed_files(opened[k].wheel);
    wheels[k] = std::move(opened[k].wheel);
  }
  return wheels;
}

// Each step adds its findings to `problems`; reading stops after a step that found any, where
// later steps would only repeat them (WHEEL, METADATA and RECORD's rows are all checked first).
std::optional<OpenedWheel> open_wheel(const std::string& path, std::optional<VariantLabel> label, Problems& problems) {
  WheelReader r(path, std::move(label), problems);
  if (!read_name_and_archive(r) || !check_layout(r)) return std::nullopt;
  list_files(r);
  if (r.failed()) return std::nullopt;
  check_windows_names(r);
  check_installed_paths(r);
  if (r.failed()) return std::nullopt;
  OtherDigests other_digests;
  {  // the dist-info texts and RECORD's rows are gone before the members stream
    auto texts = read_dist_info_texts(r);
    if (!texts) return std::nullopt;
    check_wheel_file(r, texts->wheel);
    check_metadata(r, texts->metadata);
    check_variant_metadata(r);
    const std::string record = std::exchange(texts->record, {});
    const RecordRows rows = read_record_rows(r, record);
    if (r.failed()) return std::nullopt;
    check_record_entries(r, rows, other_digests);
    if (r.failed()) return std::nullopt;
  }
  return OpenedWheel{std::move(r.w), std::move(other_digests)};
}

std::optional<Wheel> read_wheel(const WheelInput& input, Problems& problems) {
  auto named = detect_label(input);
  auto opened = open_wheel(input.path, named ? named->label : std::nullopt, problems);
  if (!opened) return std::nullopt;
  std::vector<OpenedWheel> one;
  one.push_back(std::move(*opened));
  std::vector<Problems> found(1);
  auto wheels = stream_wheels(std::move(one), found);
  problems.insert(problems.end(), found[0].begin(), found[0].end());
  return std::move(wheels[0]);
}

}  // namespace wm
