// Helpers shared by the libFuzzer harnesses: property checks that abort (so libFuzzer records
// the input as a crash), a scratch directory per process, and splitting one input in two.
#pragma once

#include "merger/base/problem.hpp"

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wm_fuzz {

// A property of the engine that must hold; a failure aborts with what was found.
#define FUZZ_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ::wm_fuzz::explain(__VA_ARGS__);                                                     \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

// For harnesses that feed a streaming reader: the chunk size byte 0 of an input picks, and the
// rest of the input handed to `fn` in consecutive pieces of that size.
inline size_t chunk_size(uint8_t selector) {
  static constexpr size_t kChunks[] = {1, 3, 7, 16, 64, 255, 4096, 1 << 20};
  return kChunks[selector % std::size(kChunks)];
}
template <typename Fn>
void in_chunks(std::span<const uint8_t> bytes, size_t chunk, Fn&& fn) {
  for (size_t at = 0; at < bytes.size(); at += chunk) fn(bytes.subspan(at, std::min(chunk, bytes.size() - at)));
}

inline void explain() {}
inline void explain(const std::string& text) { std::fprintf(stderr, "  %s\n", text.c_str()); }
inline void explain(const wm::Problems& problems) {
  for (const wm::Problem& p : problems) std::fprintf(stderr, "  problem: %s\n", wm::describe(p).c_str());
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input cut at the first `separator`: (before, after); without one, everything is `before`.
inline std::pair<std::string_view, std::string_view> split_once(std::string_view text, std::string_view separator) {
  size_t at = text.find(separator);
  if (at == std::string_view::npos) return {text, {}};
  return {text.substr(0, at), text.substr(at + separator.size())};
}

// WM_FUZZ_VERBOSE=1: the merge harnesses say what each input came to (for triage and seeds).
inline void verbose(const std::string& outcome, const wm::Problems& problems = {}) {
  static const bool on = std::getenv("WM_FUZZ_VERBOSE") != nullptr;
  if (!on) return;
  std::fprintf(stderr, "outcome: %s\n", outcome.c_str());
  explain(problems);
}

inline uint64_t little_endian(std::string_view b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b[at + i])} << (8 * i);
  return v;
}

// The separator between the two wheels of the merge harnesses' inputs.
inline constexpr std::string_view kWheelSeparator = "\n@@WHEELMERGE-FUZZ-NEXT-WHEEL@@\n";

// A directory of this process's own, removed at a normal exit; in /dev/shm when there is one.
inline std::filesystem::path make_scratch_dir() {
  std::filesystem::path base =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  std::string tmpl = (base / "wm-fuzz-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) std::abort();
  return tmpl;
}
inline void remove_scratch_dir();
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = make_scratch_dir();
  // Registered once `dir` exists, so the handler runs before `dir` is destroyed.
  static const bool registered = (std::atexit(remove_scratch_dir), true);
  (void)registered;
  return dir;
}
inline void remove_scratch_dir() {
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir(), ec);
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

// Empties `dir` (creating it when missing).
inline void reset_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
}

}  // namespace wm_fuzz
