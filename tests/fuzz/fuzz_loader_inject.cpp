// inject_loader_import over arbitrary text (a package's __init__.py). Properties: when it
// succeeds, the output holds the import line once more than the input did, at the start of a
// line, and removing it (and the newline added before it, if any) gives the input back.
#include "fuzz_common.hpp"
#include "loader.hpp"

namespace {
size_t count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source = wm_fuzz::as_text(data, size);
  std::string why;
  auto out = wm::inject_loader_import(source, why);
  if (!out) {
    FUZZ_CHECK(!why.empty(), "refused without saying why");
    return 0;
  }
  const std::string_view line = wm::kLoaderImport;
  FUZZ_CHECK(count(*out, line) == count(source, line) + 1, "the import line is not added exactly once");
  FUZZ_CHECK(out->size() == source.size() + line.size() || out->size() == source.size() + line.size() + 1);
  bool found = false;
  for (size_t at = out->find(line); at != std::string::npos && !found; at = out->find(line, at + 1)) {
    if (at != 0 && (*out)[at - 1] != '\n') continue;  // only at the start of a line
    std::string without = out->substr(0, at) + out->substr(at + line.size());
    if (without == source) found = true;
    // A newline is added when the statement before the import ends the file without one.
    if (!found && at > 0 && at + line.size() == out->size() && out->substr(0, at - 1) == source) found = true;
  }
  FUZZ_CHECK(found, "the output is not the input plus one import line: " + wm::printable(*out));
  return 0;
}
