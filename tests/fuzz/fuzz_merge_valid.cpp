// A whole merge of inputs that pass the zip and RECORD checks by construction, so that the
// fuzzer reaches planning (shared and variant files, loaders, preload order, METADATA merge,
// platform tags) and writing instead of being stopped by a CRC or a hash. The input describes
// two wheels separated by kWheelSeparator (without one, the second is the first again); each:
//
//   name: pkg-1.0-cp311-cp311-linux_x86_64   (optional file name stem; this is the default)
//   glob: pkg/_build_info.py                 (optional --variant-file pattern, repeatable)
//   fallback                                 (optional: --driver-fallback)
//   >>> pkg/__init__.py                      (a member; ">>> +x path" for an executable one)
//   ...content, up to the newline before the next ">>> " line...
//
// "$DI" in a member path is the dist-info directory of the name ({name}-{version}.dist-info).
// WHEEL and METADATA are generated from the name unless given as members; RECORD is always
// generated with every member's true hash and size. The first wheel is labelled cu12, the
// second cu13 (a ".cuNN" suffix on the file name). Properties: as for fuzz_merge, plus the
// merge with the inputs given in the other order writes a byte-identical wheel.
#include "fuzz_common.hpp"
#include "merger/base/bytes.hpp"
#include "merger/base/digest.hpp"
#include "merger/format/record.hpp"
#include "merger/merge.hpp"
#include "merger/report.hpp"
#include "merger/zip/file.hpp"
#include "merger/zip/zip_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kDefaultStem = "pkg-1.0-cp311-cp311-linux_x86_64";

struct Member {
  std::string path;
  std::string content;
  bool executable = false;
};

struct Description {
  std::string stem{kDefaultStem};
  std::vector<std::string> globs;
  bool fallback = false;
  std::vector<Member> members;
};

void replace_all(std::string& s, std::string_view what, std::string_view with) {
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size()))
    s.replace(at, what.size(), with);
}

Description parse(std::string_view text) {
  Description d;
  size_t pos = 0;
  // Directives, up to the first member.
  while (pos < text.size() && text.substr(pos, 4) != ">>> ") {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    if (line.substr(0, 6) == "name: ") {
      std::string_view stem = line.substr(6);
      if (!stem.empty() && stem.size() <= 200 &&
          stem.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos && stem != "." && stem != "..")
        d.stem = std::string(stem);
    } else if (line.substr(0, 6) == "glob: ") {
      d.globs.emplace_back(line.substr(6));
    } else if (line == "fallback") {
      d.fallback = true;
    }
  }
  // Members: ">>> [+x ]path\n" then content up to "\n>>> " or the end.
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view header =
        text.substr(pos + 4, eol == std::string_view::npos ? std::string_view::npos : eol - pos - 4);
    size_t start = eol == std::string_view::npos ? text.size() : eol + 1;
    size_t next = text.find("\n>>> ", start > 0 ? start - 1 : 0);
    size_t end = next == std::string_view::npos ? text.size() : std::max(next, start);
    Member m;
    if (header.substr(0, 3) == "+x ") {
      m.executable = true;
      header.remove_prefix(3);
    }
    m.path = std::string(header);
    m.content = std::string(text.substr(start, end - start));
    d.members.push_back(std::move(m));
    pos = next == std::string_view::npos ? text.size() : next + 1;
  }
  return d;
}

// Writes the described wheel as `dir/{stem}.{label}.whl`; returns its path.
fs::path build(const Description& d, const std::string& label, const fs::path& dir) {
  const fs::path path = dir / (d.stem + "." + label + ".whl");
  std::string why;
  auto name = wm::parse_wheel_filename(path.filename().string(), why);  // as read_wheel will read it
  if (!name) name = wm::parse_wheel_filename(std::string(kDefaultStem) + ".whl", why);
  const std::string dist_info = wm::normalize_name(name->name) + "-" + name->version + ".dist-info";

  std::vector<Member> members;
  bool has_wheel = false, has_metadata = false;
  for (Member m : d.members) {
    replace_all(m.path, "$DI", dist_info);
    if (m.path == dist_info + "/RECORD") continue;  // always generated
    has_wheel |= m.path == dist_info + "/WHEEL";
    has_metadata |= m.path == dist_info + "/METADATA";
    members.push_back(std::move(m));
  }
  if (!has_wheel) {
    std::string wheel = "Wheel-Version: 1.0\nGenerator: fuzz_merge_valid\nRoot-Is-Purelib: false\n";
    for (const std::string& tag : name->expanded_tags()) wheel += "Tag: " + tag + "\n";
    if (!name->build.empty()) wheel += "Build: " + name->build + "\n";
    members.push_back({dist_info + "/WHEEL", wheel});
  }
  if (!has_metadata)
    members.push_back({dist_info + "/METADATA",
                       fmt::format("Metadata-Version: 2.1\nName: {}\nVersion: {}\n", name->name, name->version)});
  std::string record;
  for (const Member& m : members)
    record += wm::format_record_row(
        {m.path, wm::sha256_record_hash(wm::as_bytes(m.content)), std::to_string(m.content.size())});
  record += wm::format_record_row({dist_info + "/RECORD", "", ""});
  members.push_back({dist_info + "/RECORD", record});

  wm::File out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.is_open()) std::abort();
  wm::ZipWriter writer(out, wm::DosTime{});
  for (const Member& m : members)
    if (!writer.add_generated(m.path, wm::as_bytes(m.content), m.executable)) std::abort();
  if (!writer.finish()) std::abort();
  return path;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries_in(const fs::path& dir) { return std::distance(fs::directory_iterator(dir), fs::directory_iterator()); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [first_text, second_text] = wm_fuzz::split_once(wm_fuzz::as_text(data, size), wm_fuzz::kWheelSeparator);
  Description first = parse(first_text);
  Description second = second_text.data() ? parse(second_text) : first;
  const fs::path dir = wm_fuzz::scratch_dir() / "valid";
  wm_fuzz::reset_dir(dir);
  const fs::path out = dir / "out", out_reversed = dir / "out-reversed";
  fs::create_directories(out);
  fs::create_directories(out_reversed);
  const std::string in12 = build(first, "cu12", dir).string();
  const std::string in13 = build(second, "cu13", dir).string();

  wm::MergeOptions options;
  options.variant_globs = first.globs;
  options.variant_globs.insert(options.variant_globs.end(), second.globs.begin(), second.globs.end());
  options.driver_fallback = first.fallback || second.fallback;

  wm::Problems problems;
  auto result = wm::merge_wheels({{in12, {}}, {in13, {}}}, options, out.string(), wm::DosTime{}, problems);
  wm_fuzz::verbose(result ? "merged into " + result->output : "refused", problems);
  if (!result) {
    FUZZ_CHECK(!problems.empty(), "merge_wheels failed without saying why");
    for (const wm::Problem& p : problems)
      FUZZ_CHECK(p.kind != wm::ProblemKind::other, problems);  // an I/O error or a failed output check
    FUZZ_CHECK(entries_in(out) == 0, "a failed merge left files behind");
    return 0;
  }
  FUZZ_CHECK(problems.empty(), problems);
  FUZZ_CHECK(entries_in(out) == 1 && fs::exists(result->output), "expected exactly the output wheel");

  wm::Problems read_problems;
  auto merged = wm::read_wheel({result->output, {}}, read_problems);
  FUZZ_CHECK(merged.has_value(), read_problems);
  auto inspected = wm::inspect_wheel(result->output, read_problems);
  FUZZ_CHECK(inspected.has_value(), read_problems);

  // The same inputs in the other order: the same bytes.
  wm::Problems reversed_problems;
  auto reversed =
      wm::merge_wheels({{in13, {}}, {in12, {}}}, options, out_reversed.string(), wm::DosTime{}, reversed_problems);
  FUZZ_CHECK(reversed.has_value(), reversed_problems);
  FUZZ_CHECK(fs::path(reversed->output).filename() == fs::path(result->output).filename());
  FUZZ_CHECK(slurp(reversed->output) == slurp(result->output), "the output depends on the input order");
  return 0;
}
