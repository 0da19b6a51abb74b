// inject_loader_import over arbitrary text (a package's __init__.py). Properties: a refusal
// says why, naming a line; when it succeeds, the output holds the import line once more than the
// input did, at the start of a line (after a UTF-8 BOM at the most), ending in "\n", "\r\n" or
// "\r", and removing it (and the line ending added before it when the input's last line had
// none) gives the input back; and verify's check of an __init__.py (executes_loader_import)
// accepts what the injector writes, and accepts the input itself only where the injector's
// place in it already holds the import line.
#include "fuzz_common.hpp"
#include "merger/loader.hpp"

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
    FUZZ_CHECK(why.starts_with("line "), "refused without saying where: " + why);
    return 0;
  }
  const std::string_view line = wm::kLoaderImport.substr(0, wm::kLoaderImport.size() - 1);  // without "\n"
  const std::string_view out_view = *out;
  FUZZ_CHECK(count(out_view, line) == count(source, line) + 1, "the import line is not added exactly once");
  const size_t start = source.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  FUZZ_CHECK(out_view.substr(0, start) == source.substr(0, start), "the byte order mark is not first any more");
  bool found = false;
  for (size_t at = out_view.find(line); at != std::string_view::npos && !found; at = out_view.find(line, at + 1)) {
    if (at != start && out_view[at - 1] != '\n' && out_view[at - 1] != '\r') continue;  // only at the start of a line
    for (std::string_view newline : {"\n", "\r\n", "\r"}) {
      const size_t end = at + line.size() + newline.size();
      if (out_view.substr(at + line.size(), newline.size()) != newline) continue;
      std::string without = std::string(out_view.substr(0, at)) + std::string(out_view.substr(end));
      if (without == source) found = true;
      // A line ending is added when the input's last line has none.
      if (end == out_view.size() && at >= newline.size() &&
          out_view.substr(at - newline.size(), newline.size()) == newline &&
          out_view.substr(0, at - newline.size()) == source)
        found = true;
    }
  }
  FUZZ_CHECK(found, "the output is not the input plus one import line: " + wm::printable(*out));
  FUZZ_CHECK(wm::executes_loader_import(*out), "verify refuses what the injector wrote: " + wm::printable(*out));
  if (wm::executes_loader_import(source)) {
    auto at = wm::loader_import_at(source, why);
    FUZZ_CHECK(at && source.substr(*at).starts_with(line),
               "verify accepts an import line away from the injector's place");
  }
  return 0;
}
