// A whole merge of mutated inputs: the input is two wheels' bytes separated by
// kWheelSeparator, written as pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl and .cu13.whl and
// merged with merge_wheels into an empty directory. Properties: a failed merge says why,
// leaves nothing behind and never fails its own output check; a merge that succeeds writes
// exactly one wheel, which read_wheel accepts.
#include "fuzz_common.hpp"
#include "merger/merge.hpp"

#include <filesystem>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [first, second] = wm_fuzz::split_once(wm_fuzz::as_text(data, size), wm_fuzz::kWheelSeparator);
  const fs::path dir = wm_fuzz::scratch_dir();
  const fs::path in12 = dir / "pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl";
  const fs::path in13 = dir / "pkg-1.0-cp311-cp311-linux_x86_64.cu13.whl";
  const fs::path out = dir / "out";
  wm_fuzz::write_file(in12, first);
  wm_fuzz::write_file(in13, second);
  wm_fuzz::reset_dir(out);

  wm::Problems problems;
  auto result = wm::merge_wheels({{in12.string(), {}}, {in13.string(), {}}}, wm::MergeOptions{}, out.string(),
                                 wm::DosTime{}, problems);
  size_t written = std::distance(fs::directory_iterator(out), fs::directory_iterator());
  wm_fuzz::verbose(result ? "merged into " + result->output : "refused", problems);
  if (!result) {
    FUZZ_CHECK(!problems.empty(), "merge_wheels failed without saying why");
    for (const wm::Problem& p : problems)
      FUZZ_CHECK(p.what.rfind("output check failed", 0) != 0, problems);  // the merge wrote a bad wheel
    FUZZ_CHECK(written == 0, "a failed merge left files behind");
    return 0;
  }
  FUZZ_CHECK(problems.empty(), problems);
  FUZZ_CHECK(written == 1 && fs::exists(result->output), "expected exactly the output wheel");
  wm::Problems read_problems;
  auto merged = wm::read_wheel({result->output, {}}, read_problems);
  FUZZ_CHECK(merged.has_value(), read_problems);
  return 0;
}
