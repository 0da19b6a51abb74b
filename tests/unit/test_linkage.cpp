#include "merger/linkage.hpp"
#include "merger/wheel.hpp"

#include <doctest/doctest.h>
#include <memory>

using namespace wm;

namespace {
ElfInfo native(ElfHeader header, std::vector<std::string> needed = {}) {
  ElfInfo info;
  info.shared_object = true;
  info.needed = std::move(needed);
  info.header = header;
  return info;
}
constexpr ElfHeader kX86_64{62, 2, 1}, kAarch64{183, 2, 1}, kI386{3, 1, 1}, kCubin{190, 2, 1}, kS390x{22, 2, 2};

Problems check(const ElfInfo& elf, std::vector<std::string> platforms, std::vector<VariantLabel> builds) {
  LinkageTarget target = linkage_target(platforms, builds);
  target.platforms = "tags";
  Problems problems;
  check_native_file("w.whl", "pkg/_ext.so", elf, target, problems);
  return problems;
}
}  // namespace

TEST_CASE("the CUDA majors of NVIDIA's libraries, by their SONAME") {
  using V = std::vector<int>;
  CHECK(cuda_majors_of_library("libcudart.so.12") == V{12});
  CHECK(cuda_majors_of_library("libcudart.so.13") == V{13});
  CHECK(cuda_majors_of_library("libcudart.so.11.0") == V{11});
  CHECK(cuda_majors_of_library("libcublasLt.so.13") == V{13});
  CHECK(cuda_majors_of_library("libnvrtc.so.12") == V{12});
  CHECK(cuda_majors_of_library("libnvrtc-builtins.so.13.0") == V{13});
  CHECK(cuda_majors_of_library("libnvJitLink.so.13") == V{13});
  CHECK(cuda_majors_of_library("libnppc.so.12") == V{12});
  // cuFFT's SONAME is one behind the toolkit: 11 in CUDA 12, 12 in CUDA 13.
  CHECK(cuda_majors_of_library("libcufft.so.11") == V{12});
  CHECK(cuda_majors_of_library("libcufftw.so.12") == V{13});
  // cuSOLVER 11 ships with CUDA 11 and 12, cuSPARSE 12 with CUDA 12 and 13.
  CHECK(cuda_majors_of_library("libcusolver.so.11") == V{11, 12});
  CHECK(cuda_majors_of_library("libcusolver.so.12") == V{13});
  CHECK(cuda_majors_of_library("libcusparse.so.12") == V{12, 13});
  CHECK(cuda_majors_of_library("libcusolver.so.99") == std::nullopt);
  // The same SONAME in every toolkit, or not NVIDIA's toolkit libraries.
  for (const char* name : {"libcurand.so.10", "libcudnn.so.9", "libnccl.so.2", "libcufile.so.0", "libc.so.6",
                           "libcuda.so.1", "libcudart.so", "libcudart.so.", "libcudart.so.12x", "libcudart.so.1a.2",
                           "cudart.so.12", "lib.so.12", "libcudart_static.a", "libcudart.so.99999"})
    CHECK_MESSAGE(cuda_majors_of_library(name) == std::nullopt, name);
}

TEST_CASE("the ELF headers of platform tags: Linux ones of known machines") {
  CHECK(elf_headers_of_platforms({"manylinux_2_28_x86_64", "manylinux2014_x86_64"}) == std::vector<ElfHeader>{kX86_64});
  CHECK(elf_headers_of_platforms({"musllinux_1_2_aarch64"}) == std::vector<ElfHeader>{kAarch64});
  CHECK(elf_headers_of_platforms({"linux_i686"}) == std::vector<ElfHeader>{kI386});
  CHECK(elf_headers_of_platforms({"manylinux_2_17_s390x"}) == std::vector<ElfHeader>{kS390x});
  CHECK(elf_headers_of_platforms({"manylinux_2_17_ppc64le"}) == std::vector<ElfHeader>{{21, 2, 1}});
  CHECK(elf_headers_of_platforms({"any"}).empty());
  CHECK(elf_headers_of_platforms({"win_amd64"}).empty());
  CHECK(elf_headers_of_platforms({"macosx_11_0_arm64"}).empty());
  CHECK(elf_headers_of_platforms({"linux_sparc64"}).empty());
}

TEST_CASE("a native file of another machine than the tags is refused; GPU code fits every wheel") {
  const auto problems = check(native(kAarch64), {"manylinux_2_28_x86_64"}, {});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::invalid_input);
  CHECK(problems[0].member == "pkg/_ext.so");
  CHECK(problems[0].expected == "x86-64 (e_machine 62, 64-bit, little-endian), as tags says");
  CHECK(problems[0].found == "AArch64 (e_machine 183, 64-bit, little-endian)");
  CHECK(check(native(kI386), {"linux_x86_64"}, {}).size() == 1);         // 32-bit in a 64-bit wheel
  CHECK(check(native({62, 1, 1}), {"linux_x86_64"}, {}).size() == 1);    // x32
  CHECK(check(native({183, 2, 2}), {"linux_aarch64"}, {}).size() == 1);  // big-endian AArch64
  CHECK(check(native(kX86_64), {"manylinux_2_28_x86_64"}, {}).empty());
  CHECK(check(native(kAarch64), {"any"}, {}).empty());                       // no machine to hold it to
  CHECK(check(native(kCubin), {"manylinux_2_28_aarch64"}, {}).empty());      // a cubin
  CHECK(check(native({224, 2, 1}), {"manylinux_2_28_x86_64"}, {}).empty());  // an AMD GPU code object
}

TEST_CASE("a build that links a CUDA library of another major than its label's is refused") {
  const ElfInfo ext = native(kX86_64, {"libc.so.6", "libcudart.so.12", "libcurand.so.10"});
  CHECK(check(ext, {"linux_x86_64"}, {VariantLabel::cuda(12)}).empty());
  const auto problems = check(ext, {"linux_x86_64"}, {VariantLabel::cuda(13)});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "the cu13 build links a CUDA library of another major");
  CHECK(problems[0].expected == "CUDA 13's libraries (cu13)");
  CHECK(problems[0].found == "DT_NEEDED libcudart.so.12, a library of CUDA 12");
  // A shared file of a merged wheel belongs to every build: refused for the one it does not fit.
  const auto shared = check(ext, {"linux_x86_64"}, {VariantLabel::cuda(12), VariantLabel::cuda(13)});
  REQUIRE(shared.size() == 1);
  CHECK(shared[0].what == "the cu13 build links a CUDA library of another major");
  // torch labels by their CUDA major; a CPU-only torch links no CUDA library at all.
  CHECK(check(ext, {"linux_x86_64"}, {VariantLabel::torch(2, 10, 12)}).empty());
  const auto cpu_torch = check(ext, {"linux_x86_64"}, {VariantLabel::torch(2, 10, 0)});
  REQUIRE(cpu_torch.size() == 1);
  CHECK(cpu_torch[0].expected == "no CUDA library (torch210_cpu is a torch without CUDA)");
  // A CPU level says nothing of CUDA.
  CHECK(check(ext, {"linux_x86_64"}, {VariantLabel::cpu(3)}).empty());
  // Libraries two majors ship fit both.
  CHECK(check(native(kX86_64, {"libcusparse.so.12"}), {"linux_x86_64"}, {VariantLabel::cuda(13)}).empty());
  CHECK(check(native(kX86_64, {"libcusolver.so.11"}), {"linux_x86_64"}, {VariantLabel::cuda(13)}).size() == 1);
}

TEST_CASE("the newest glibc platform tags allow: the lowest manylinux tag's; none for musllinux") {
  const GlibcLimit both = glibc_limit_of_platforms({"manylinux_2_28_x86_64", "manylinux_2_24_x86_64"});
  CHECK(both.newest == std::pair(2, 24));
  CHECK(both.tag == "manylinux_2_24_x86_64");
  CHECK(glibc_limit_of_platforms({"manylinux2014_x86_64"}).newest == std::pair(2, 17));
  const GlibcLimit musl = glibc_limit_of_platforms({"musllinux_1_2_x86_64"});
  CHECK(musl.musl);
  CHECK_FALSE(musl.newest);
  // A wheel that also claims a glibc system is held to that claim, not refused glibc outright.
  CHECK_FALSE(glibc_limit_of_platforms({"musllinux_1_2_x86_64", "manylinux_2_17_x86_64"}).musl);
  const GlibcLimit plain = glibc_limit_of_platforms({"linux_x86_64"});
  CHECK_FALSE(plain.newest);
  CHECK_FALSE(plain.musl);
}

TEST_CASE("a native file needing a newer glibc than the tags is refused, naming the newest need") {
  ElfInfo ext = native(kX86_64, {"libc.so.6"});
  ext.version_needs = {{"libc.so.6", "GLIBC_2.2.5"},
                       {"libc.so.6", "GLIBC_2.34"},
                       {"libm.so.6", "GLIBC_2.29"},
                       {"libc.so.6", "GLIBC_PRIVATE"},
                       {"libstdc++.so.6", "GLIBCXX_3.4.30"}};
  CHECK(check(ext, {"manylinux_2_34_x86_64"}, {}).empty());
  CHECK(check(ext, {"linux_x86_64"}, {}).empty());  // no claim made
  const auto old = check(ext, {"manylinux_2_17_x86_64"}, {});
  REQUIRE(old.size() == 1);
  CHECK(old[0].what == "a native file that needs a newer glibc than the wheel's platform tags");
  CHECK(old[0].expected == "GLIBC_2.17 or older, as manylinux_2_17_x86_64 says");
  CHECK(old[0].found == "GLIBC_2.34 of libc.so.6");
  const auto musl = check(ext, {"musllinux_1_2_x86_64"}, {});
  REQUIRE(musl.size() == 1);
  CHECK(musl[0].what == "a native file that needs glibc in a musllinux wheel");
  CHECK(musl[0].expected == "no glibc symbol versions, as musllinux_1_2_x86_64 says");
  ElfInfo odd = native(kX86_64);
  odd.version_needs = {{"libc.so.6", "GLIBC_2"}, {"libc.so.6", "GLIBC_X.1"}, {"libc.so.6", "GLIBC_2.99x"}};
  CHECK(check(odd, {"manylinux_2_17_x86_64"}, {}).empty());  // no version glibc's form gives
}

TEST_CASE("one problem per CUDA major, however many builds and libraries: the first named, the rest counted") {
  ElfInfo ext = native(kX86_64);
  for (int i = 0; i < 4096; ++i) ext.needed.push_back(i % 2 ? "libcublas.so.12" : "libcudart.so.12");
  std::vector<VariantLabel> builds;
  for (int minor = 0; minor < 100; ++minor) builds.push_back(VariantLabel::torch(2, minor, 13));
  for (int minor = 0; minor < 100; ++minor) builds.push_back(VariantLabel::torch(2, minor, 12));
  const auto problems = check(ext, {"linux_x86_64"}, builds);
  REQUIRE(problems.size() == 1);  // the CUDA 12 builds fit
  CHECK(problems[0].what == "the torch20_cu13 build links a CUDA library of another major");
  CHECK(problems[0].expected == "CUDA 13's libraries (torch20_cu13 and 99 more builds)");
  CHECK(problems[0].found == "DT_NEEDED libcudart.so.12, a library of CUDA 12, and 4095 more of other majors");
  const auto cpu = check(ext, {"linux_x86_64"}, {VariantLabel::torch(2, 10, 0), VariantLabel::torch(2, 11, 0)});
  REQUIRE(cpu.size() == 1);
  CHECK(cpu[0].expected == "no CUDA library (torch210_cpu and 1 more builds, each a torch without CUDA)");
}

namespace {
std::optional<std::string> libstdcxx(std::string platform, std::vector<std::string> versions) {
  Wheel w;
  w.display = "w.whl";
  w.name.platform = {std::move(platform)};
  ElfInfo info = native(kX86_64);
  for (std::string& v : versions) info.version_needs.push_back({"libstdc++.so.6", std::move(v)});
  WheelFile f;
  f.path = "pkg/_ext.so";
  f.elf_info = std::make_shared<const ElfInfo>(std::move(info));
  w.files.push_back(f);
  return libstdcxx_warning(w);
}
}  // namespace

TEST_CASE("libstdc++'s symbol versions against the manylinux tag's auditwheel policy") {
  // Within manylinux_2_17's GLIBCXX_3.4.19 and CXXABI_1.3.7, and the names held to no limit.
  CHECK_FALSE(libstdcxx("manylinux_2_17_x86_64", {"GLIBCXX_3.4", "GLIBCXX_3.4.19", "CXXABI_1.3.7", "CXXABI_TM_1",
                                                  "CXXABI_FLOAT128", "GLIBCXX_LDBL_3.4.21"}));
  auto found = libstdcxx("manylinux_2_17_x86_64", {"GLIBCXX_3.4.9", "CXXABI_1.3.9", "GLIBCXX_3.4.22"});
  REQUIRE(found);
  CHECK(*found ==
        "w.whl: pkg/_ext.so: needs GLIBCXX_3.4.22 of libstdc++.so.6, newer than manylinux_2_17_x86_64 allows "
        "(GLIBCXX_3.4.19 and CXXABI_1.3.7 or older, auditwheel's policy manylinux_2_17): systems with an older "
        "libstdc++ cannot load it, and auditwheel show will not grant the tag");
  CHECK(libstdcxx("manylinux2014_x86_64", {"CXXABI_1.3.8"}));
  // A tag between policies is held to the one below it; one past every policy to none.
  CHECK_FALSE(libstdcxx("manylinux_2_30_x86_64", {"GLIBCXX_3.4.24", "CXXABI_1.3.11"}));
  CHECK(libstdcxx("manylinux_2_30_x86_64", {"GLIBCXX_3.4.25"}));
  CHECK_FALSE(libstdcxx("manylinux_2_50_x86_64", {"GLIBCXX_3.4.40"}));
  // musllinux and linux tags promise nothing of libstdc++.
  CHECK_FALSE(libstdcxx("musllinux_1_2_x86_64", {"GLIBCXX_3.4.30"}));
  CHECK_FALSE(libstdcxx("linux_x86_64", {"GLIBCXX_3.4.30"}));
}

TEST_CASE("linkage: the CUDA majors of NVIDIA's Windows DLLs, as the SONAMEs of the same libraries") {
  using Majors = std::optional<std::vector<int>>;
  CHECK(cuda_majors_of_dll("cudart64_12.dll") == Majors{{12}});
  CHECK(cuda_majors_of_dll("CUBLAS64_13.DLL") == Majors{{13}});
  CHECK(cuda_majors_of_dll("cublasLt64_12.dll") == Majors{{12}});
  CHECK(cuda_majors_of_dll("cufft64_11.dll") == Majors{{12}});
  CHECK(cuda_majors_of_dll("cufft64_12.dll") == Majors{{13}});
  CHECK(cuda_majors_of_dll("cusolver64_11.dll") == Majors{{11, 12}});
  CHECK(cuda_majors_of_dll("nvrtc64_120_0.dll") == Majors{{12}});
  CHECK(cuda_majors_of_dll("nvrtc-builtins64_130.dll") == Majors{{13}});
  CHECK(cuda_majors_of_dll("nvJitLink_130_0.dll") == Majors{{13}});
  CHECK(cuda_majors_of_dll("nppc64_12.dll") == Majors{{12}});
  // Not NVIDIA's, named by another release, or no CUDA major either way.
  for (const char* other : {"KERNEL32.dll", "cupti64_2025.1.0.dll", "curand64_10.dll", "cudnn64_9.dll", "nvcuda.dll",
                            "cudart64_12.so", "cudart64_.dll", "nvrtc64_12_0.dll", "cudart64_12_0.dll"})
    CHECK_MESSAGE(!cuda_majors_of_dll(other), other);
}
