// read_zip over arbitrary bytes (held in a memfd, read through /proc/self/fd), then every
// member streamed with stream_member. Properties: read_zip either refuses with problems or
// returns entries that are safe, unique and inside the file; streaming a member either
// reports a problem or delivers exactly the claimed number of bytes.
#include "fuzz_common.hpp"
#include "merger/zip/member_stream.hpp"
#include "merger/zip/zip_archive.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <set>

namespace {
int memfd() {
  static const int fd = [] {
    int f = ::memfd_create("fuzz_zip", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0) std::abort();
  if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  wm::Problems problems;
  auto zip = wm::read_zip(path, "fuzz.whl", problems);
  if (!zip) {
    FUZZ_CHECK(!problems.empty(), "read_zip refused without saying why");
    return 0;
  }
  FUZZ_CHECK(problems.empty(), problems);
  FUZZ_CHECK(zip->size == size);
  std::set<std::string> names;
  for (const wm::ZipEntry& e : zip->entries) {
    FUZZ_CHECK(wm::unsafe_name_reason(e.name).empty(), "accepted an unsafe name: " + wm::printable(e.name));
    FUZZ_CHECK(names.emplace(e.name).second, "accepted a duplicate name: " + wm::printable(e.name));
    FUZZ_CHECK(e.method == wm::kMethodStored || e.method == wm::kMethodDeflate);
    FUZZ_CHECK(e.data_offset <= size && e.compressed_size <= size - e.data_offset, "data outside the file");

    uint64_t produced = 0;
    auto problem = wm::stream_member(
        *zip, e,
        [&](std::span<const uint8_t> chunk) {
          produced += chunk.size();
          FUZZ_CHECK(produced <= e.uncompressed_size, "stream_member delivered more than the claimed size");
          return true;
        },
        "fuzz.whl", [&] { produced = 0; });
    if (!problem) FUZZ_CHECK(produced == e.uncompressed_size, "a member read whole is not of its claimed size");

    // The bounded whole-member read agrees with streaming.
    wm::Problems read_problems;
    auto content = wm::read_member(*zip, e, 1 << 16, "fuzz.whl", read_problems);
    if (content) {
      FUZZ_CHECK(!problem && content->size() == e.uncompressed_size);
    } else {
      FUZZ_CHECK(!read_problems.empty());
      FUZZ_CHECK(problem || e.uncompressed_size > (1 << 16), read_problems);
    }
  }
  return 0;
}
