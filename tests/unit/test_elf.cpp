#include "merger/elf.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

using namespace wm;

namespace {
// Feeds a real file through the scanner in odd-sized chunks, as streaming would.
std::optional<ElfInfo> scan(const std::string& path, size_t chunk) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> data{std::istreambuf_iterator<char>(in), {}};
  REQUIRE(!data.empty());
  ElfScanner s;
  for (size_t at = 0; at < data.size(); at += chunk)
    s.feed(std::span<const uint8_t>(data).subspan(at, std::min(chunk, data.size() - at)));
  std::vector<uint8_t> strings;
  if (auto r = s.missing_strings()) strings.assign(data.begin() + r->offset, data.begin() + r->offset + r->size);
  return s.finish(strings);
}
}  // namespace

TEST_CASE("a system shared library's SONAME and needs") {
  for (size_t chunk : {size_t{1} << 20, size_t{4093}}) {
    auto info = scan("/lib/x86_64-linux-gnu/libz.so.1", chunk);
    REQUIRE(info);
    CHECK(info->shared_object);
    CHECK(info->soname == "libz.so.1");
    CHECK(std::find(info->needed.begin(), info->needed.end(), "libc.so.6") != info->needed.end());
  }
}

TEST_CASE("an executable without SONAME") {
  auto info = scan("/proc/self/exe", 65536);
  REQUIRE(info);
  CHECK(info->soname.empty());
  CHECK_FALSE(info->needed.empty());
}

TEST_CASE("not ELF") {
  CHECK_FALSE(ElfScanner::has_magic(std::vector<uint8_t>{'P', 'K', 3, 4}));
  ElfScanner s;
  std::vector<uint8_t> junk(100, 0x7F);
  s.feed(junk);
  CHECK_FALSE(s.finish());
}
