#include "merger/write.hpp"

#include "merger/base/bytes.hpp"
#include "merger/base/interrupt.hpp"
#include "merger/base/memory.hpp"
#include "merger/loader.hpp"
#include "merger/verify.hpp"
#include "merger/zip/member_stream.hpp"

#include <fmt/format.h>
#include <zip.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_map>

namespace wm {

namespace {

// An open directory, for linking the finished file into it.
struct Dir {
  int fd = -1;
  ~Dir() {
    if (fd >= 0) ::close(fd);
  }
};

// Records a failed check of the output `display`.
struct CheckFailures {
  const std::string& display;
  Problems& problems;
  void operator()(std::string_view member, std::string what, std::string expected, std::string actual) const {
    problems.push_back({ProblemKind::other, display, std::string(member), "output check failed: " + std::move(what),
                        std::move(expected), std::move(actual)});
  }
};

// Each member read back has the planned name and size, and each generated one the planned bytes.
void check_members(const ZipArchive& zip, const MergePlan& plan, const CheckFailures& fail) {
  for (size_t i = 0; i < plan.members.size(); ++i) {
    const PlannedMember& m = plan.members[i];
    const ZipEntry& e = zip.entries[i];
    if (e.name != m.path || e.uncompressed_size != m.size) {
      fail(m.path, "member", fmt::format("{} ({} bytes)", m.path, m.size),
           fmt::format("{} ({} bytes)", e.name, e.uncompressed_size));
      continue;
    }
    if (!m.input) {  // generated: its bytes read back and compared with the plan's
      size_t at = 0;
      bool same = true;
      auto p = stream_member(
          zip, e,
          [&](std::span<const uint8_t> chunk) {
            same = same && at + chunk.size() <= m.content.size() &&
                   m.content.compare(at, chunk.size(), reinterpret_cast<const char*>(chunk.data()), chunk.size()) == 0;
            at += chunk.size();
            return true;
          },
          fail.display,
          [&] {
            at = 0;
            same = true;
          });
      if (p && p->kind == ProblemKind::interrupted)
        fail.problems.push_back(*p);  // not a failed check
      else if (p)
        fail(m.path, p->what, p->expected, p->found);
      else if (!same || at != m.content.size())
        fail(m.path, "content", "the planned bytes", "other bytes");
    }
  }
}

// The loaders against the files written, as `wheelmerge verify` checks them.
void check_written_loaders(const MergePlan& plan, const CheckFailures& fail) {
  std::vector<std::string_view> paths;
  std::vector<LoaderFiles> loaders;
  std::unordered_map<std::string_view, const PlannedMember*> by_path;
  for (const PlannedMember& m : plan.members) {
    paths.push_back(m.path);
    by_path.emplace(m.path, &m);
  }
  auto content_of = [&](const std::string& path) {
    auto it = by_path.find(path);
    return it == by_path.end() ? std::string() : std::string(it->second->content);
  };
  for (const std::string& package : plan.loader_packages) {
    LoaderFiles l{package + "/" + std::string(kLoaderModule), {}, {}, {}};
    l.loader_source = content_of(l.loader_path);
    l.init_source = content_of(package + "/__init__.py");
    const std::string rules_path = package + "/" + std::string(kRulesModule);
    if (by_path.count(rules_path)) l.rules_source = content_of(rules_path);
    loaders.push_back(std::move(l));
  }
  std::sort(paths.begin(), paths.end());
  Problems loader_problems;
  check_loaders(fail.display, loaders, paths, loader_problems);
  for (const Problem& p : loader_problems) fail(p.member, p.what, p.expected, p.found);
}

// libzip's consistency check, a second and independent reader, and its count of the `members`.
void check_with_libzip(const std::string& path, size_t members, const CheckFailures& fail) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, error);
    fail({}, "libzip consistency check", "an archive libzip accepts", zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return;
  }
  if (zip_get_num_entries(z, 0) != static_cast<zip_int64_t>(members))
    fail({}, "libzip entry count", std::to_string(members), std::to_string(zip_get_num_entries(z, 0)));
  zip_discard(z);
}

}  // namespace

void check_written(const std::string& path, const std::string& display, const MergePlan& plan, Problems& problems,
                   const std::function<void()>& read_back) {
  const size_t members = plan.members.size();  // read_back may free them
  const CheckFailures fail{display, problems};
  Problems found;
  auto zip = read_zip(path, display, found);
  if (!zip) {
    for (const Problem& p : found) fail(p.member, p.what, p.expected, p.found);
    return;
  }
  if (zip->entries.size() != plan.members.size()) {
    fail({}, "member count", std::to_string(plan.members.size()), std::to_string(zip->entries.size()));
    return;
  }
  check_members(*zip, plan, fail);
  zip.reset();  // the archive as read back is gone before libzip reads it (below)
  check_written_loaders(plan, fail);
  if (read_back) read_back();
  release_free_memory();  // what the checks above freed, before libzip builds its own model
  check_with_libzip(path, members, fail);
}

namespace {

// The output file as it is written: unnamed in its directory, or, where the file system has
// no O_TMPFILE or /proc is not mounted, under `temp_name`. `self`: a path that opens it.
struct Output {
  Dir dir;
  File file;
  std::string temp_name;
  std::string self;
  void discard() const {
    if (!temp_name.empty()) ::unlinkat(dir.fd, temp_name.c_str(), 0);
  }
};

// Records that writing `target` failed: what, and why (errno's text unless given); returns false.
bool write_failed(Problems& problems, const std::string& target, std::string what,
                  std::string detail = std::strerror(errno)) {
  problems.push_back({ProblemKind::other, target, {}, std::move(what), {}, std::move(detail)});
  return false;
}

// An unnamed file in the directory `dir_fd` (O_TMPFILE), which is read back and linked into
// place through its /proc/self/fd path (`self`): a closed File where the file system has no
// O_TMPFILE, or where that path does not name the file (no /proc mounted, as in a chroot or a
// container, or another process's /proc), so that a named temporary file is used instead.
// Both are Linux's: elsewhere the named file is the only way.
File open_unnamed([[maybe_unused]] int dir_fd, [[maybe_unused]] std::string& self) {
#ifndef __linux__
  return File();
#else
  File file(::openat(dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
  if (!file.is_open()) return file;
  std::string path = fmt::format("/proc/self/fd/{}", file.fd());
  struct stat by_fd {};
  struct stat by_path {};
  if (::fstat(file.fd(), &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0 || by_fd.st_dev != by_path.st_dev ||
      by_fd.st_ino != by_path.st_ino)
    return File();
  self = std::move(path);
  return file;
#endif
}

// The output directory created and opened, and the file to write in it; never an input's path.
bool open_output(const std::string& out_dir, const std::string& filename, const std::string& target,
                 std::span<const Wheel> inputs, Output& out, Problems& problems) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return write_failed(problems, target, "cannot create the output directory", ec.message());
  struct stat target_stat {};
  if (::stat(target.c_str(), &target_stat) == 0) {
    for (const Wheel& w : inputs) {
      struct stat input_stat {};
      if (::stat(w.path.c_str(), &input_stat) == 0 && input_stat.st_dev == target_stat.st_dev &&
          input_stat.st_ino == target_stat.st_ino)
        return write_failed(problems, target, "the output would replace an input", w.path);
    }
  }
  out.dir.fd = ::open(out_dir.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (out.dir.fd < 0) return write_failed(problems, target, "cannot open the output directory");

  // An unnamed file: killed at any moment, the merge leaves nothing behind.
  out.file = open_unnamed(out.dir.fd, out.self);
  if (!out.file.is_open()) {
    out.temp_name = fmt::format(".{}.{}.tmp", filename, ::getpid());
    out.self = (std::filesystem::path(out_dir) / out.temp_name).string();
    out.file = File(::openat(out.dir.fd, out.temp_name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666));
    if (!out.file.is_open())
      return write_failed(problems, target, "cannot create a temporary file in the output directory");
  }
  return true;
}

// The plan's members and the central directory written to `out` (discarded when that fails).
// The writer, and its central directory records, are gone before the output is checked.
bool write_members(const MergePlan& plan, std::span<const Wheel> inputs, DosTime time, const std::string& target,
                   const Output& out, Problems& problems) {
  ZipWriter writer(out.file, time);
  writer.reserve(plan.members.size());
  for (const PlannedMember& m : plan.members) {
    if (int signal = interrupted()) {
      out.discard();
      problems.push_back(interruption(target, {}, signal));
      return false;
    }
    bool ok = m.input
                  ? writer.add_copy(m.path, inputs[*m.input].zip, inputs[*m.input].zip.entries[m.entry], m.executable)
                  : writer.add_generated(m.path, as_bytes(m.content), m.executable);
    if (!ok) {
      out.discard();
      return write_failed(problems, target, "cannot write " + std::string(m.path));
    }
  }
  if (!writer.finish()) {
    out.discard();
    return write_failed(problems, target, "cannot write the central directory");
  }
  return true;
}

// Into place under its name, with no other name on the way: an older output of that name is
// removed first, so whenever the run is killed the path holds nothing or a whole wheel, and
// nothing stray lies beside it.
bool move_into_place(const Output& out, const std::string& filename, const std::string& target, Problems& problems) {
  if (out.temp_name.empty()) {
    for (int attempt = 0;; ++attempt) {
      if (::linkat(AT_FDCWD, out.self.c_str(), out.dir.fd, filename.c_str(), AT_SYMLINK_FOLLOW) == 0) break;
      if (errno != EEXIST || attempt == 3) return write_failed(problems, target, "cannot link the output into place");
      if (::unlinkat(out.dir.fd, filename.c_str(), 0) != 0 && errno != ENOENT)
        return write_failed(problems, target, "cannot replace the older output");
    }
  } else if (::renameat(out.dir.fd, out.temp_name.c_str(), out.dir.fd, filename.c_str()) != 0) {
    out.discard();
    return write_failed(problems, target, "cannot rename the output into place");
  }
  return true;
}

}  // namespace

std::optional<std::string> write_wheel(const MergePlan& plan, std::span<const Wheel> inputs, const std::string& out_dir,
                                       DosTime time, Problems& problems, const WriteHooks& hooks) {
  namespace fs = std::filesystem;
  const std::string target = (fs::path(out_dir) / plan.filename).string();
  Output out;
  if (!open_output(out_dir, plan.filename, target, inputs, out, problems)) return std::nullopt;
  if (!write_members(plan, inputs, time, target, out, problems)) return std::nullopt;
  if (hooks.copied) hooks.copied();
  const size_t before = problems.size();
  check_written(out.self, target, plan, problems, hooks.read_back);
  if (problems.size() != before) {
    out.discard();
    return std::nullopt;
  }

  if (int signal = interrupted()) {
    out.discard();
    problems.push_back(interruption(target, {}, signal));
    return std::nullopt;
  }
  if (!move_into_place(out, plan.filename, target, problems)) return std::nullopt;
  return target;
}

}  // namespace wm
