#include "driver/process.hpp"

#include "merger/base/interrupt.hpp"
#include "merger/base/text.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>

extern char** environ;

namespace wm {

Environment current_environment() {
  Environment env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

int run_logged(const std::vector<std::string>& argv, const Environment& env, const std::string& cwd,
               const std::string& log_path, std::string& error) {
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    error = fmt::format("cannot open log {}: {}", log_path, std::strerror(errno));
    return -1;
  }
  std::string header = fmt::format("$ {}\n", shell_quote(argv));
  (void)!::write(log, header.data(), header.size());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log, STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // PATH lookup uses the child's PATH, as a shell would.
  const std::string program = find_program(argv.front(), env).value_or(argv.front());
  // The child starts with SIGPIPE's default action, whatever this process does with it (the
  // command line ignores it, to report a closed stdout as an error): a build's pipelines
  // (`cmd | head`) end as they would from a shell.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, program.c_str(), &actions, &attributes, args.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(log);
  if (rc != 0) {
    error = fmt::format("cannot run {}: {}", argv.front(), std::strerror(rc));
    return -1;
  }
  // Polled rather than blocked on, so an interrupt reaches the child promptly.
  int status = 0;
  bool forwarded = false;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (int signal = interrupted(); signal && !forwarded) {
      ::kill(pid, signal);
      forwarded = true;
    }
    ::usleep(20000);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> path_list(std::string_view list) {
  std::vector<std::string> dirs = split(list, ':');
  std::erase(dirs, std::string());
  return dirs;
}

std::optional<std::string> find_program(const std::string& name, const Environment& env) {
  if (name.find('/') != std::string::npos) return name;
  const auto path = env.find("PATH");
  if (path == env.end()) return std::nullopt;
  for (const std::string& dir : path_list(path->second))
    if (std::string candidate = dir + "/" + name; ::access(candidate.c_str(), X_OK) == 0) return candidate;
  return std::nullopt;
}

std::string tail_lines(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) out += "    " + l + "\n";
  return out;
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@%") ==
                          std::string::npos) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::optional<std::string> make_temp_directory(std::string_view prefix, std::string& why) {
  std::string variable, root = "/tmp";
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"})
    if (const char* value = std::getenv(name); value && *value) {
      variable = name, root = value;
      break;
    }
  const std::string where = variable.empty() ? root : fmt::format("{}={} (the temporary directory)", variable, root);
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    why = fmt::format("{}: {}", where, std::strerror(errno));
    return std::nullopt;
  }
  if (!S_ISDIR(st.st_mode)) {
    why = fmt::format("{}: not a directory", where);
    return std::nullopt;
  }
  std::string path = fmt::format("{}/{}-XXXXXX", root, prefix);
  if (!::mkdtemp(path.data())) {
    why = fmt::format("{}: cannot create a directory in it: {}", where, std::strerror(errno));
    return std::nullopt;
  }
  return path;
}

}  // namespace wm
