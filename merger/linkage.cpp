#include "merger/linkage.hpp"

#include "merger/format/wheel_name.hpp"
#include "merger/wheel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace wm {

namespace {

// How the SONAME major of an NVIDIA library relates to the CUDA major of the toolkit and runtime
// wheels that ship it. Read from the libraries of the nvidia-* wheels that torch 2.10.0 (CUDA
// 12.8) and torch 2.11.0 and 2.15.0 (CUDA 13.0, 13.2) require, and CUDA 11's toolkit:
// libcudart.so.12 and .13, libcufft.so.11 (nvidia-cufft-cu12 11.3) and .12 (nvidia-cufft 12.0),
// libcusolver.so.11 (CUDA 11 and nvidia-cusolver-cu12 11.7) and .12 (nvidia-cusolver 12.0),
// libcusparse.so.12 (nvidia-cusparse-cu12 12.5 and nvidia-cusparse 12.6).
enum class Relation { same, one_more, listed };
struct CudaLibrary {
  std::string_view base;  // "cudart" for libcudart.so.N
  Relation relation;
  std::array<std::pair<int, std::array<int, 2>>, 3> listed{};  // for `listed`: SONAME major -> CUDA majors (0: none)
};
constexpr CudaLibrary kCudaLibraries[] = {
    {"cublas", Relation::same},
    {"cublasLt", Relation::same},
    {"cudart", Relation::same},
    {"cufft", Relation::one_more},
    {"cufftw", Relation::one_more},
    {"cupti", Relation::same},
    {"cusolver", Relation::listed, {{{10, {10, 0}}, {11, {11, 12}}, {12, {13, 0}}}}},
    {"cusolverMg", Relation::listed, {{{10, {10, 0}}, {11, {11, 12}}, {12, {13, 0}}}}},
    {"cusparse", Relation::listed, {{{10, {10, 0}}, {11, {11, 0}}, {12, {12, 13}}}}},
    {"nppc", Relation::same},
    {"nppial", Relation::same},
    {"nppicc", Relation::same},
    {"nppidei", Relation::same},
    {"nppif", Relation::same},
    {"nppig", Relation::same},
    {"nppim", Relation::same},
    {"nppist", Relation::same},
    {"nppisu", Relation::same},
    {"nppitc", Relation::same},
    {"npps", Relation::same},
    {"nvJitLink", Relation::same},
    {"nvblas", Relation::same},
    {"nvjpeg", Relation::same},
    {"nvrtc", Relation::same},
    {"nvrtc-builtins", Relation::same},
    {"nvrtc-builtins.alt", Relation::same},
    {"nvrtc.alt", Relation::same},
};

bool device_code(uint16_t machine) {
  return machine == kElfMachineCuda || machine == kElfMachineAmdgpu || machine == kElfMachineBpf;
}

struct Architecture {
  std::string_view arch;  // as platform tags spell it
  ElfHeader header;
};
constexpr Architecture kArchitectures[] = {
    {"x86_64", {62, 2, 1}},   {"i686", {3, 1, 1}},          {"aarch64", {183, 2, 1}}, {"armv7l", {40, 1, 1}},
    {"armv6l", {40, 1, 1}},   {"ppc64le", {21, 2, 1}},      {"ppc64", {21, 2, 2}},    {"s390x", {22, 2, 2}},
    {"riscv64", {243, 2, 1}}, {"loongarch64", {258, 2, 1}},
};

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case 3:
      return "x86";
    case 8:
      return "MIPS";
    case 20:
      return "PowerPC";
    case 21:
      return "PowerPC64";
    case 22:
      return "S/390";
    case 40:
      return "ARM";
    case 62:
      return "x86-64";
    case 183:
      return "AArch64";
    case kElfMachineCuda:
      return "CUDA";
    case kElfMachineAmdgpu:
      return "AMDGPU";
    case 243:
      return "RISC-V";
    case kElfMachineBpf:
      return "BPF";
    case 258:
      return "LoongArch";
    default:
      return "machine";
  }
}

// The numbers of a dotted version at the start of `text` ("2.34" -> {2, 34}, "3.4.30" -> {3, 4,
// 30}): at most `parts` numbers of at most four digits each, separated by single dots; what
// follows must be nothing or, with `rest`, is given there. nullopt for anything else. The one
// reader of version numbers in SONAMEs and symbol versions.
std::optional<std::vector<int>> dotted_numbers(std::string_view text, size_t parts, std::string_view* rest = nullptr) {
  std::vector<int> numbers;
  while (numbers.size() < parts) {
    size_t digits = 0;
    int value = 0;
    while (digits < text.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(text[digits])))
      value = value * 10 + (text[digits++] - '0');
    if (digits == 0) return std::nullopt;
    numbers.push_back(value);
    text.remove_prefix(digits);
    if (text.size() < 2 || text[0] != '.' || !std::isdigit(static_cast<unsigned char>(text[1]))) break;
    text.remove_prefix(1);
  }
  if (rest)
    *rest = text;
  else if (!text.empty())
    return std::nullopt;
  return numbers;
}

// The version of a symbol version of `prefix` ("GLIBC_2.34" -> 2.34, "GLIBC_2.2.5" -> 2.2,
// "GLIBCXX_3.4.30" -> 3.4.30); nullopt for others (GLIBC_PRIVATE, GLIBCXX_3.4 of another prefix,
// CXXABI_TM_1, CXXABI_FLOAT128, LDBL_3.4).
std::optional<std::vector<int>> symbol_version(std::string_view name, std::string_view prefix, size_t parts) {
  if (!name.starts_with(prefix)) return std::nullopt;
  std::string_view rest;
  auto numbers = dotted_numbers(name.substr(prefix.size()), parts, &rest);
  if (!numbers || (!rest.empty() && rest[0] != '.') || numbers->size() < 2) return std::nullopt;
  return numbers;
}

std::optional<std::pair<int, int>> glibc_version(std::string_view name) {
  auto v = symbol_version(name, "GLIBC_", 2);
  if (!v) return std::nullopt;
  return std::pair((*v)[0], (*v)[1]);
}
}  // namespace

std::optional<std::vector<int>> cuda_majors_of_library(std::string_view name) {
  const size_t so = name.rfind(".so.");
  if (!name.starts_with("lib") || so == std::string_view::npos || so <= 3) return std::nullopt;
  const std::string_view base = name.substr(3, so - 3), version = name.substr(so + 4);
  // The SONAME's version: numbers separated by dots ("12", "11.0", "12.8").
  const auto numbers = dotted_numbers(version, 8);
  if (!numbers) return std::nullopt;
  const int major = numbers->front();
  const auto library = std::find_if(std::begin(kCudaLibraries), std::end(kCudaLibraries),
                                    [&](const CudaLibrary& l) { return l.base == base; });
  if (library == std::end(kCudaLibraries)) return std::nullopt;
  switch (library->relation) {
    case Relation::same:
      return std::vector<int>{major};
    case Relation::one_more:
      return std::vector<int>{major + 1};
    case Relation::listed:
      for (const auto& [soname_major, cuda] : library->listed)
        if (soname_major == major && cuda[0] != 0) {
          std::vector<int> majors{cuda[0]};
          if (cuda[1] != 0) majors.push_back(cuda[1]);
          return majors;
        }
      return std::nullopt;  // a SONAME major no known toolkit ships: no claim either way
  }
  return std::nullopt;
}

std::optional<std::vector<int>> cuda_majors_of_dll(std::string_view name) {
  // NAME64_MAJOR.dll (cudart64_12.dll, cufft64_11.dll), or NAME64_MAJORMINOR_0.dll and
  // NAME_MAJORMINOR_0.dll for NVRTC and nvJitLink (nvrtc64_120_0.dll, nvJitLink_130_0.dll), whose
  // three digits are the CUDA release: 12.0 -> major 12. Windows compares names without case.
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; });
  if (!lower.ends_with(".dll")) return std::nullopt;
  std::string_view stem = std::string_view(lower).substr(0, lower.size() - 4);
  const size_t underscore = stem.find('_');
  if (underscore == std::string_view::npos) return std::nullopt;
  std::string_view base = stem.substr(0, underscore), version = stem.substr(underscore + 1);
  if (base.ends_with("64")) base.remove_suffix(2);
  const auto library = std::find_if(std::begin(kCudaLibraries), std::end(kCudaLibraries), [&](const CudaLibrary& l) {
    return std::equal(l.base.begin(), l.base.end(), base.begin(), base.end(),
                      [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a + 32 : a) == b; });
  });
  if (library == std::end(kCudaLibraries)) return std::nullopt;
  const bool release = library->base.starts_with("nvrtc") || library->base == "nvJitLink";
  // Only NVRTC's and nvJitLink's names go on after the number ("_0"); cupti64_2025.1.0.dll is
  // named by its own release, not CUDA's.
  if (!release && version.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  const auto numbers = dotted_numbers(version.substr(0, version.find('_')), 1);
  if (!numbers || (release && numbers->front() < 100)) return std::nullopt;
  const int soname_major = release ? numbers->front() / 10 : numbers->front();
  return cuda_majors_of_library(fmt::format("lib{}.so.{}", library->base, soname_major));
}

std::vector<ElfHeader> elf_headers_of_platforms(const std::vector<std::string>& platform_tags) {
  std::vector<ElfHeader> headers;
  for (const std::string& tag : platform_tags) {
    const PlatformTag p = parse_platform_tag(tag);
    if (p.family != PlatformTag::Family::manylinux && p.family != PlatformTag::Family::musllinux &&
        p.family != PlatformTag::Family::linux)
      continue;
    for (const Architecture& a : kArchitectures)
      if (a.arch == p.arch && std::find(headers.begin(), headers.end(), a.header) == headers.end())
        headers.push_back(a.header);
  }
  return headers;
}

GlibcLimit glibc_limit_of_platforms(const std::vector<std::string>& platform_tags) {
  GlibcLimit limit;
  bool musl = false, other = false;
  for (const std::string& tag : platform_tags) {
    const PlatformTag p = parse_platform_tag(tag);
    if (p.family == PlatformTag::Family::manylinux) {
      if (!limit.newest || std::pair(p.major, p.minor) < *limit.newest) {
        limit.newest = std::pair(p.major, p.minor);
        limit.tag = tag;
      }
    } else if (p.family == PlatformTag::Family::musllinux) {
      musl = true;
      if (limit.tag.empty()) limit.tag = tag;
    } else {
      other = true;
    }
  }
  limit.musl = musl && !limit.newest && !other;
  return limit;
}

namespace {

void check_glibc(const std::string& display, std::string_view member, const ElfInfo& elf, const GlibcLimit& limit,
                 Problems& problems) {
  if (!limit.newest && !limit.musl) return;
  const ElfVersionNeed* newest = nullptr;
  std::pair<int, int> newest_version{0, 0};
  for (const ElfVersionNeed& need : elf.version_needs)
    if (auto v = glibc_version(need.version); v && (!newest || *v > newest_version)) {
      newest = &need;
      newest_version = *v;
    }
  if (!newest || (limit.newest && newest_version <= *limit.newest)) return;
  problems.push_back({ProblemKind::invalid_input, display, std::string(member),
                      limit.musl ? "a native file that needs glibc in a musllinux wheel"
                                 : "a native file that needs a newer glibc than the wheel's platform tags",
                      limit.musl ? fmt::format("no glibc symbol versions, as {} says", limit.tag)
                                 : fmt::format("GLIBC_{}.{} or older, as {} says", limit.newest->first,
                                               limit.newest->second, limit.tag),
                      fmt::format("{} of {}", newest->version, newest->file)});
}

// The newest libstdc++ symbol versions auditwheel's manylinux policies allow (its
// manylinux-policy.json, auditwheel 6.x: GLIBCXX_3.4.N and CXXABI_1.3.M for every N and M up to
// these, on every architecture), by the policy's glibc minor. Where architectures differ
// (manylinux_2_26, 2_39) the higher is taken; the architecture-specific names (CXXABI_TM_1,
// CXXABI_FLOAT128, LDBL_*, IEEE128_*) are not held to a limit.
struct CxxLimit {
  int glibc_minor, glibcxx, cxxabi;
};
constexpr CxxLimit kCxxLimits[] = {{5, 8, 1},    {12, 13, 3},  {17, 19, 7},  {24, 22, 10}, {26, 24, 11}, {27, 24, 11},
                                   {28, 24, 11}, {31, 28, 12}, {34, 29, 13}, {35, 30, 13}, {36, 30, 13}, {37, 30, 13},
                                   {38, 30, 13}, {39, 33, 15}, {40, 33, 15}, {41, 33, 15}};

// The limits of the policy of the highest glibc at or below the tag's (manylinux_2_30 is held to
// 2_28's); none for a tag newer than every policy, which no auditwheel release knows yet.
const CxxLimit* cxx_limit(const GlibcLimit& limit) {
  if (!limit.newest || limit.newest->first != 2 || limit.newest->second > std::end(kCxxLimits)[-1].glibc_minor)
    return nullptr;
  const CxxLimit* policy = nullptr;
  for (const CxxLimit& l : kCxxLimits)
    if (l.glibc_minor <= limit.newest->second) policy = &l;
  return policy;
}

// How far a libstdc++ symbol version ("GLIBCXX_3.4.30", "CXXABI_1.3.9") passes the policy: 0
// within it or of no numbered form, else its patch level above the limit.
int past_limit(std::string_view version, const CxxLimit& policy) {
  const auto cxx = symbol_version(version, "GLIBCXX_", 3);
  const auto abi = cxx ? std::nullopt : symbol_version(version, "CXXABI_", 3);
  const auto& v = cxx ? cxx : abi;
  if (!v || (*v)[0] != (cxx ? 3 : 1) || (*v)[1] != (cxx ? 4 : 3)) return 0;
  const int patch = v->size() > 2 ? (*v)[2] : 0;
  return std::max(0, patch - (cxx ? policy.glibcxx : policy.cxxabi));
}
}  // namespace

std::string describe_elf_header(const ElfHeader& h) {
  return fmt::format("{} (e_machine {}, {}-bit, {}-endian)", machine_name(h.machine), h.machine,
                     h.elf_class == 2 ? 64 : 32, h.data == 2 ? "big" : "little");
}

// A file of a build whose CUDA libraries (`linked`: DT_NEEDED entries or imported DLLs, read by
// `majors_of`) are of another CUDA major than the build's label says.
void check_cuda_links(const std::string& display, std::string_view member, const std::vector<std::string>& linked_names,
                      std::string_view how, std::optional<std::vector<int>> (*majors_of)(std::string_view),
                      const LinkageTarget& target, Problems& problems) {
  // The CUDA libraries it links, with the majors that ship each, in the file's order.
  std::vector<std::pair<const std::string*, std::vector<int>>> linked;
  for (const std::string& name : linked_names)
    if (auto majors = majors_of(name)) linked.emplace_back(&name, std::move(*majors));
  if (linked.empty()) return;
  for (const auto& [major, builds] : target.majors) {
    const std::pair<const std::string*, std::vector<int>>* first = nullptr;
    size_t others = 0;
    for (const auto& library : linked) {
      if (std::find(library.second.begin(), library.second.end(), major) != library.second.end()) continue;
      if (first)
        ++others;
      else
        first = &library;
    }
    if (!first) continue;
    const std::string label = builds.first.str();
    const std::string more = builds.count > 1 ? fmt::format(" and {} more builds", builds.count - 1) : "";
    problems.push_back(
        {ProblemKind::invalid_input, display, std::string(member),
         fmt::format("the {} build links a CUDA library of another major", label),
         major == 0 ? fmt::format("no CUDA library ({}{} a torch without CUDA)", label,
                                  builds.count > 1 ? more + ", each" : " is")
                    : fmt::format("CUDA {}'s libraries ({}{})", major, label, more),
         fmt::format("{}{}, a library of CUDA {}{}", how, *first->first, fmt::join(first->second, " and "),
                     others ? fmt::format(", and {} more of other majors", others) : "")});
  }
}

void check_native_file(const std::string& display, std::string_view member, const ElfInfo& elf,
                       const LinkageTarget& target, Problems& problems) {
  const ElfHeader& h = elf.header;
  if (!target.headers.empty() && !device_code(h.machine) &&
      std::find(target.headers.begin(), target.headers.end(), h) == target.headers.end()) {
    std::vector<std::string> wanted;
    for (const ElfHeader& w : target.headers) wanted.push_back(describe_elf_header(w));
    problems.push_back({ProblemKind::invalid_input, display, std::string(member),
                        "a native file for another machine than the wheel's platform tags",
                        fmt::format("{}, as {} says", fmt::join(wanted, " or "), target.platforms),
                        describe_elf_header(h)});
  }
  check_glibc(display, member, elf, target.glibc, problems);
  check_cuda_links(display, member, elf.needed, "DT_NEEDED ", cuda_majors_of_library, target, problems);
}

LinkageTarget linkage_target(const std::vector<std::string>& platform_tags, const std::vector<VariantLabel>& builds) {
  LinkageTarget target{fmt::format("{}", fmt::join(platform_tags, ".")),
                       elf_headers_of_platforms(platform_tags),
                       glibc_limit_of_platforms(platform_tags),
                       {}};
  for (const VariantLabel& label : builds) {
    if (label.selector() == Selector::cpu) continue;  // a CPU level says nothing of CUDA
    auto [it, fresh] = target.majors.try_emplace(label.cuda_major(), BuildsOfMajor{label, 0});
    ++it->second.count;
  }
  return target;
}

namespace {
// The machines a Windows or macOS platform tag's files may be for: a file must be for one of
// them (one slice of a universal Mach-O file is enough; a tag of several architectures,
// universal2 or intel, holds each file to having one of them, not all). Empty for other tags.
struct ForeignTarget {
  std::vector<uint32_t> machines;
  bool macho = false;
};
ForeignTarget foreign_target(const std::string& tag) {
  constexpr uint32_t x86 = 7, x86_64 = 0x1000007, arm64 = 0x100000C, ppc = 18, ppc64 = 0x1000012;
  if (tag == "win_amd64") return {{0x8664}, false};
  if (tag == "win_arm64") return {{0xAA64, 0xA641}, false};  // ARM64 and ARM64EC images
  if (tag == "win32") return {{0x14C}, false};
  if (!tag.starts_with("macosx_")) return {};
  const std::string arch = tag.substr(tag.find('_', tag.find('_', 7) + 1) + 1);  // macosx_11_0_ARCH
  static const std::map<std::string, std::vector<uint32_t>, std::less<>> kArches = {
      {"x86_64", {x86_64}},
      {"arm64", {arm64}},
      {"i386", {x86}},
      {"ppc", {ppc}},
      {"ppc64", {ppc64}},
      {"universal2", {x86_64, arm64}},
      {"intel", {x86, x86_64}},
      {"fat", {x86, ppc}},
      {"fat3", {x86, x86_64, ppc}},
      {"fat64", {x86_64, ppc64}},
      {"universal", {x86, x86_64, ppc, ppc64}}};
  const auto it = kArches.find(arch);
  return it == kArches.end() ? ForeignTarget{} : ForeignTarget{it->second, true};
}

std::string describe_machine(bool macho, uint32_t machine) {
  static const std::map<uint32_t, std::string_view> kPe = {
      {0x8664, "x64"}, {0xAA64, "ARM64"}, {0xA641, "ARM64EC"}, {0x14C, "x86"}, {0x1C4, "ARMNT"}};
  static const std::map<uint32_t, std::string_view> kMacho = {
      {7, "i386"}, {0x1000007, "x86_64"}, {12, "arm"}, {0x100000C, "arm64"}, {0x200000C, "arm64_32"},
      {18, "ppc"}, {0x1000012, "ppc64"}};
  const auto& names = macho ? kMacho : kPe;
  const auto it = names.find(machine);
  return fmt::format("{} ({} {:#x})", it == names.end() ? "machine" : it->second,
                     macho ? "Mach-O CPU type" : "PE machine", machine);
}

// PE images in Windows wheels and Mach-O files in macOS wheels against the machines of the tags.
void check_foreign_files(const Wheel& wheel, Problems& problems) {
  if (wheel.native_machines.empty()) return;
  std::vector<ForeignTarget> targets;
  for (const std::string& tag : wheel.name.platform)
    if (ForeignTarget t = foreign_target(tag); !t.machines.empty()) targets.push_back(std::move(t));
  const std::string tags = fmt::format("{}", fmt::join(wheel.name.platform, "."));
  for (const auto& [path, found] : wheel.native_machines) {
    bool held = false, fits = false;
    std::vector<std::string> wanted;
    for (const ForeignTarget& t : targets) {
      if (t.macho != found.macho) continue;
      held = true;
      const auto has = [&](uint32_t m) {
        return std::find(found.machines.begin(), found.machines.end(), m) != found.machines.end();
      };
      fits = fits || std::any_of(t.machines.begin(), t.machines.end(), has);
      for (uint32_t m : t.machines) wanted.push_back(describe_machine(t.macho, m));
    }
    if (!held || fits) continue;
    std::vector<std::string> have;
    for (uint32_t m : found.machines) have.push_back(describe_machine(found.macho, m));
    problems.push_back({ProblemKind::invalid_input, wheel.display, path,
                        "a native file for another machine than the wheel's platform tags",
                        fmt::format("{}, as {} says", fmt::join(wanted, " or "), tags),
                        fmt::format("{}", fmt::join(have, " and "))});
  }
}
}  // namespace

void check_native_files(const Wheel& wheel, const std::vector<VariantLabel>& builds,
                        const std::map<std::string, VariantLabel, std::less<>>& build_of, Problems& problems) {
  check_foreign_files(wheel, problems);
  const LinkageTarget all = linkage_target(wheel.name.platform, builds);
  std::map<VariantLabel, LinkageTarget> of_one;  // a variant file's: its build alone
  auto target_of = [&](std::string_view path) -> const LinkageTarget& {
    const auto it = build_of.find(path);
    if (it == build_of.end()) return all;
    auto one = of_one.find(it->second);
    if (one == of_one.end()) one = of_one.emplace(it->second, linkage_target(wheel.name.platform, {it->second})).first;
    return one->second;
  };
  for (const WheelFile& f : wheel.files)
    if (f.elf_info) check_native_file(wheel.display, f.path, *f.elf_info, target_of(f.path), problems);
  for (const auto& [path, found] : wheel.native_machines)  // PE images: the DLLs they import
    if (!found.macho)
      check_cuda_links(wheel.display, path, found.imports, "imports ", cuda_majors_of_dll, target_of(path), problems);
}

std::optional<std::string> libstdcxx_warning(const Wheel& wheel) {
  const GlibcLimit limit = glibc_limit_of_platforms(wheel.name.platform);
  const CxxLimit* policy = cxx_limit(limit);
  if (!policy) return std::nullopt;
  size_t files = 0;
  const ElfVersionNeed* worst = nullptr;
  std::string_view worst_member;
  for (const WheelFile& f : wheel.files) {
    if (!f.elf_info) continue;
    const ElfVersionNeed* newest = nullptr;
    for (const ElfVersionNeed& need : f.elf_info->version_needs)
      if (past_limit(need.version, *policy) > (newest ? past_limit(newest->version, *policy) : 0)) newest = &need;
    if (!newest) continue;
    ++files;
    if (!worst || past_limit(newest->version, *policy) > past_limit(worst->version, *policy)) {
      worst = newest;
      worst_member = f.path;
    }
  }
  if (!worst) return std::nullopt;
  const bool many = files > 1;
  return fmt::format(
      "{}: {}{}: need{} {} of {}, newer than {} allows (GLIBCXX_3.4.{} and CXXABI_1.3.{} or older, auditwheel's "
      "policy manylinux_2_{}): systems with an older libstdc++ cannot load {}, and auditwheel show will not grant "
      "the tag",
      wheel.display, worst_member, many ? fmt::format(" and {} more native files", files - 1) : "", many ? "" : "s",
      worst->version, worst->file, limit.tag, policy->glibcxx, policy->cxxabi, policy->glibc_minor,
      many ? "them" : "it");
}

}  // namespace wm
