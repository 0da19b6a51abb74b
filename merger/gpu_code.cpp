#include "merger/gpu_code.hpp"

#include "merger/base/bytes.hpp"
#include "merger/zip/member_stream.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

namespace wm {

namespace {
constexpr std::string_view kFatbinSection(".nv_fatbin\0", 11);  // as the section names hold it
constexpr uint64_t kMaxSectionNames = 1 << 20;
constexpr uint32_t kShtProgbits = 1;

// [lo, hi) of `range` that `chunk`, starting at `pos`, overlaps, as a subspan (empty when none).
std::span<const uint8_t> overlap(std::span<const uint8_t> chunk, uint64_t pos, const ByteRange& range) {
  uint64_t lo = std::max(pos, range.offset), hi = std::min(pos + chunk.size(), range.offset + range.size);
  if (lo >= hi) return {};
  return chunk.subspan(lo - pos, hi - lo);
}

// Streams the member once more, handing `fn` the bytes that overlap each range. The ranges are
// sorted and disjoint: each chunk is matched from the first range not yet passed, so the work is
// linear in the bytes and the ranges together.
std::optional<Problem> stream_ranges(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                     const std::vector<ByteRange>& ranges,
                                     const std::function<void(size_t, std::span<const uint8_t>)>& fn,
                                     const std::function<void()>& restart) {
  const uint64_t end = ranges.empty() ? 0 : ranges.back().offset + ranges.back().size;
  uint64_t pos = 0;
  size_t first = 0;  // ranges before it end at or before pos
  return stream_member(
      zip, entry,
      [&](std::span<const uint8_t> chunk) {
        const uint64_t chunk_end = pos + chunk.size();
        for (size_t i = first; i < ranges.size() && ranges[i].offset < chunk_end; ++i)
          if (auto part = overlap(chunk, pos, ranges[i]); !part.empty()) fn(i, part);
        while (first < ranges.size() && ranges[first].offset + ranges[first].size <= chunk_end) ++first;
        pos = chunk_end;
        return pos < end;
      },
      display,
      [&] {
        pos = 0;
        first = 0;
        restart();
      });
}

// The bytes of an ELF file's section names, `names`, read in one more pass. `problem` is set where
// the member cannot be streamed; the bytes then mean nothing.
std::vector<uint8_t> section_names(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                   const ElfSectionScanner::Section& names, std::optional<Problem>& problem) {
  std::vector<uint8_t> fetched;
  fetched.reserve(names.size);
  problem = stream_ranges(
      zip, entry, display, {{names.offset, names.size}},
      [&](size_t, std::span<const uint8_t> part) { fetched.insert(fetched.end(), part.begin(), part.end()); },
      [&] { fetched.clear(); });
  return fetched;
}

// Where an ELF file's `.nv_fatbin` sections (PROGBITS, named exactly so) lie, sorted by offset. Empty,
// with `unreadable` set, where one lies outside the file or two overlap.
// `named(at)`: whether the section names hold ".nv_fatbin\0" at `at`.
std::vector<ByteRange> fatbin_sections(const std::vector<ElfSectionScanner::Section>& sections,
                                       const std::function<bool(uint32_t)>& named, uint64_t file_size,
                                       std::string& unreadable) {
  std::vector<ByteRange> ranges;
  for (const ElfSectionScanner::Section& s : sections) {
    if (!named(s.name) || s.type != kShtProgbits) continue;
    if (s.offset > file_size || s.size > file_size - s.offset) {
      unreadable = "its .nv_fatbin section lies outside the file";
      return {};
    }
    ranges.push_back({s.offset, s.size});
  }
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].offset < ranges[i - 1].offset + ranges[i - 1].size) {
      unreadable = "its .nv_fatbin sections overlap";
      return {};
    }
  return ranges;
}

// The code of the fat binaries in `ranges`, walked in one more pass over the member; nothing where
// one cannot be read, which the result says. nullopt, with `problem` set, where the member cannot be
// streamed.
std::optional<GpuCodeScan> walk_fatbins(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                        const std::vector<ByteRange>& ranges, std::optional<Problem>& problem) {
  std::vector<FatbinWalker> walkers;
  for (const ByteRange& r : ranges) walkers.emplace_back(r.size);
  problem = stream_ranges(
      zip, entry, display, ranges, [&](size_t i, std::span<const uint8_t> part) { walkers[i].feed(part); },
      [&] {
        walkers.clear();
        for (const ByteRange& r : ranges) walkers.emplace_back(r.size);
      });
  if (problem) return std::nullopt;
  GpuCodeScan result;
  for (FatbinWalker& w : walkers) {
    GpuCodeScan one = std::move(w).finish();
    if (!one.unreadable.empty() && result.unreadable.empty()) result.unreadable = ".nv_fatbin: " + one.unreadable;
    result.code.insert(one.code.begin(), one.code.end());
  }
  if (!result.unreadable.empty()) result.code.clear();
  return result;
}

}  // namespace

void GpuCodeScanner::NameHits::feed(std::span<const uint8_t> chunk) {
  const uint64_t pos = seen;
  seen += chunk.size();
  if (overflow) return;
  auto hit = [&](uint64_t where) {
    if (at.size() == kMaxNameHits) overflow = true;
    if (!overflow) at.push_back(where);
  };
  // A name that starts in the bytes kept from before.
  if (!carry.empty()) {
    std::vector<uint8_t> joint = carry;
    joint.insert(joint.end(), chunk.begin(), chunk.begin() + std::min(chunk.size(), kFatbinSection.size() - 1));
    for (size_t i = 0; i < carry.size() && i + kFatbinSection.size() <= joint.size(); ++i)
      if (std::equal(kFatbinSection.begin(), kFatbinSection.end(), joint.begin() + static_cast<ptrdiff_t>(i)))
        hit(pos - carry.size() + i);
  }
  // Each '.' (memchr: several times faster than a Boyer-Moore-Horspool search over code) and the rest.
  const uint8_t* const first = chunk.data();
  const uint8_t* const last = first + chunk.size();
  for (const uint8_t* dot = first; last - dot >= static_cast<ptrdiff_t>(kFatbinSection.size()); ++dot) {
    dot = static_cast<const uint8_t*>(std::memchr(dot, '.', static_cast<size_t>(last - dot)));
    if (!dot || last - dot < static_cast<ptrdiff_t>(kFatbinSection.size())) break;
    if (std::memcmp(dot, kFatbinSection.data(), kFatbinSection.size()) == 0)
      hit(pos + static_cast<uint64_t>(dot - first));
  }
  // The last bytes that could start a name, joined with what is kept when the chunk is short.
  const size_t keep = kFatbinSection.size() - 1;
  if (chunk.size() >= keep) carry.clear();
  carry.insert(carry.end(), chunk.end() - static_cast<ptrdiff_t>(std::min(keep, chunk.size())), chunk.end());
  if (carry.size() > keep) carry.erase(carry.begin(), carry.end() - static_cast<ptrdiff_t>(keep));
}

std::optional<GpuCodeScanner> GpuCodeScanner::start(std::span<const uint8_t> head, uint64_t size, bool fatbin_name) {
  GpuCodeScanner s;
  if (ElfScanner::has_magic(head)) {
    s.elf_.emplace(size, 0);
    s.recorder_.emplace(size);
  } else if (fatbin_name && FatbinWalker::has_magic(head)) {
    s.fatbin_.emplace(size);
  } else {
    return std::nullopt;
  }
  return s;
}

void GpuCodeScanner::feed(std::span<const uint8_t> chunk) {
  if (fatbin_) fatbin_->feed(chunk);
  if (elf_) elf_->feed(chunk);
  if (recorder_) recorder_->feed(chunk);
  if (elf_) names_.feed(chunk);
}

std::optional<GpuCodeScan> GpuCodeScanner::finish(const ZipArchive& zip, const ZipEntry& entry,
                                                  const std::string& display, std::optional<Problem>& problem) {
  if (fatbin_) return std::move(*fatbin_).finish();
  GpuCodeScan none;
  // A cubin is code for one GPU, but its header does not say whether it is arch-specific
  // (sm_90 and sm_90a cubins have the same flags): nothing is claimed for it.
  if (elf_->machine() == kElfMachineCuda) return none;
  switch (elf_->state()) {
    case ElfSectionScanner::State::not_elf64:  // no CUDA fat binary in one
    case ElfSectionScanner::State::no_table:   // no sections: no fat binary section either
      return none;
    case ElfSectionScanner::State::unreadable:  // it may have one: nothing is claimed for its build
      none.unreadable = elf_->why_not();
      return none;
    case ElfSectionScanner::State::read:
      break;
  }
  const std::vector<ElfSectionScanner::Section> sections = elf_->sections();
  const ElfSectionScanner::Section& names = sections[elf_->names_index()];
  const uint64_t file_size = elf_->bytes_seen();
  if (names.size > kMaxSectionNames || names.offset > file_size || names.size > file_size - names.offset) {
    none.unreadable = "its section names lie outside the file";
    return none;
  }
  std::vector<ByteRange> ranges;
  auto within = [&](uint32_t at) { return at <= names.size && names.size - at >= kFatbinSection.size(); };
  if (!names_.overflow) {  // names_.at is sorted
    ranges = fatbin_sections(
        sections,
        [&](uint32_t at) {
          return within(at) && std::binary_search(names_.at.begin(), names_.at.end(), names.offset + at);
        },
        file_size, none.unreadable);
  } else {
    ++passes_;
    const std::vector<uint8_t> bytes = section_names(zip, entry, display, names, problem);
    if (problem) return std::nullopt;
    ranges = fatbin_sections(
        sections,
        [&](uint32_t at) {
          return within(at) && std::equal(kFatbinSection.begin(), kFatbinSection.end(), bytes.begin() + at);
        },
        file_size, none.unreadable);
  }
  if (ranges.empty()) return none;
  if (auto code = recorder_->code_in(ranges)) {
    none.code = std::move(*code);
    return none;
  }
  ++passes_;
  return walk_fatbins(zip, entry, display, ranges, problem);
}

std::optional<GpuCodeScan> scan_gpu_code(const ZipArchive& zip, const ZipEntry& entry, const std::string& display,
                                         std::optional<Problem>& problem, int* further_passes) {
  std::optional<GpuCodeScanner> scanner;
  bool first = true;
  const bool fatbin_name = entry.name.ends_with(".fatbin");
  problem = stream_member(
      zip, entry,
      [&](std::span<const uint8_t> chunk) {
        if (first) scanner = GpuCodeScanner::start(chunk, entry.uncompressed_size, fatbin_name);
        first = false;
        if (scanner) scanner->feed(chunk);
        return scanner.has_value();
      },
      display,
      [&] {
        first = true;
        scanner.reset();
      });
  if (problem) return std::nullopt;
  std::optional<GpuCodeScan> found = scanner ? scanner->finish(zip, entry, display, problem) : GpuCodeScan{};
  if (further_passes) *further_passes = scanner ? scanner->further_passes() : 0;
  return found;
}

namespace {
// The provider's catalog: majors 5 to 12, minors 0 to 9.
constexpr unsigned kLowMajor = 5, kHighMajor = 12;

// An sm_arch value's major and minor: "86_real" -> {8, 6}, "120_virtual" -> {12, 0}.
std::optional<std::pair<unsigned, unsigned>> sm_arch_value(std::string_view value) {
  const size_t underscore = value.find('_');
  if (underscore == std::string_view::npos || underscore < 2 || underscore > 3) return std::nullopt;
  const std::string_view digits = value.substr(0, underscore), kind = value.substr(underscore + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits[0] == '0')
    return std::nullopt;
  const unsigned number = static_cast<unsigned>(std::stoul(std::string(digits)));
  const unsigned major = number / 10, minor = number % 10;
  if (major < kLowMajor || major > kHighMajor) return std::nullopt;
  if (kind == "real" || (kind == "virtual" && minor == 0)) return std::pair{major, minor};
  return std::nullopt;
}
}  // namespace

std::optional<Problem> sm_arch_claim_problem(const std::vector<std::string>& claimed, const SmArch& supported,
                                             bool has_gpu_code) {
  std::map<unsigned, unsigned> lowest;  // major -> the lowest minor every file runs from
  for (const std::string& value : supported.values)
    if (auto parsed = sm_arch_value(value)) lowest[parsed->first] = parsed->second;
  const std::string runs_on = supported.values.empty() ? std::string("no GPU every file with GPU code runs on")
                                                       : fmt::format("{}", fmt::join(supported.values, " "));
  for (const std::string& value : claimed) {
    const auto parsed = sm_arch_value(value);
    if (!parsed)
      return Problem{ProblemKind::invalid_input,
                     {},
                     {},
                     "nvidia :: sm_arch value of no form the provider matches",
                     fmt::format("MAJORMINOR_real or MAJOR0_virtual, majors {} to {}", kLowMajor, kHighMajor),
                     printable(value)};
    if (!has_gpu_code) continue;
    const auto [major, minor] = *parsed;
    if (auto at = lowest.find(major); at == lowest.end() || at->second > minor)
      return Problem{ProblemKind::invalid_input,
                     {},
                     {},
                     fmt::format("nvidia :: sm_arch {} promises GPUs {}.{} and later of major {} the build's code does "
                                 "not run on",
                                 value, major, minor, major),
                     fmt::format("values the GPU code backs ({})", runs_on),
                     value};
  }
  return std::nullopt;
}

SmArch sm_arch_values(const std::vector<std::pair<std::string, std::set<GpuCode>>>& files) {
  SmArch out;
  struct Cover {
    unsigned minor;
    bool sass;  // reached by machine code, not only by PTX
  };
  // Per major, the lowest minor from which every file runs on every GPU of that major.
  std::map<unsigned, Cover> build;
  bool first = true;
  unsigned ptx_low = UINT32_MAX;  // the lowest PTX architecture any file has
  std::string ptx_file;
  for (const auto& [path, code] : files) {
    std::map<unsigned, Cover> file;
    for (const GpuCode& c : code) {
      const unsigned major = c.arch / 10, minor = c.arch % 10;
      if (c.kind == GpuCode::Kind::ptx && c.suffix != 'a' && c.arch < ptx_low) {
        ptx_low = c.arch;
        ptx_file = path;
      }
      if (c.suffix == 'a' || major < kLowMajor || major > kHighMajor) continue;
      if (c.kind == GpuCode::Kind::ptx && minor != 0) continue;
      auto [it, fresh] = file.try_emplace(major, Cover{minor, c.kind == GpuCode::Kind::sass});
      if (!fresh) {
        if (minor < it->second.minor)
          it->second = {minor, c.kind == GpuCode::Kind::sass};
        else if (minor == it->second.minor && c.kind == GpuCode::Kind::sass)
          it->second.sass = true;
      }
    }
    if (file.empty())
      out.notes.push_back(
          fmt::format("{} has only code no sm_arch value describes ({})", path, fmt::join(spelled(code), " ")));
    if (first) {
      build = std::move(file);
      first = false;
      continue;
    }
    for (auto it = build.begin(); it != build.end();) {
      auto other = file.find(it->first);
      if (other == file.end()) {
        it = build.erase(it);
        continue;
      }
      if (other->second.minor > it->second.minor)
        it->second = other->second;
      else if (other->second.minor == it->second.minor)
        it->second.sass = it->second.sass && other->second.sass;
      ++it;
    }
  }
  if (build.empty()) {
    if (!files.empty()) out.notes.push_back("no GPU runs every file's code by the provider's rule: no sm_arch");
    return out;
  }
  for (auto it = build.rbegin(); it != build.rend(); ++it) {
    const auto& [major, cover] = *it;
    out.values.push_back(
        fmt::format("{}{}_{}", major, cover.minor, cover.minor == 0 && !cover.sass ? "virtual" : "real"));
  }
  // PTX runs on every later GPU, compiled by the driver, but the provider matches it only on
  // GPUs of its own major: the catalog's later majors with no value of their own get another
  // build or the non-variant wheel.
  if (ptx_low != UINT32_MAX) {
    std::vector<unsigned> missed;
    for (unsigned major = ptx_low / 10 + 1; major <= kHighMajor; ++major)
      if (!build.count(major)) missed.push_back(major);
    if (!missed.empty())
      out.notes.push_back(fmt::format(
          "PTX for compute_{} ({}) would also run on GPUs of major {}, but the provider matches PTX only on its own "
          "major: those GPUs get another build or the non-variant wheel",
          ptx_low, ptx_file, fmt::join(missed, ", ")));
  }
  return out;
}

SmArch build_sm_arch(const BuildGpuCode& code) {
  if (code.unreadable.empty()) return code.files.empty() ? SmArch{} : sm_arch_values(code.files);
  SmArch none;
  for (const auto& [path, why] : code.unreadable)
    none.notes.push_back(fmt::format("cannot read the GPU code of {} ({}): no sm_arch for this build", path, why));
  return none;
}

}  // namespace wm
