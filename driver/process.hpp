// Running a child process with a given environment and working directory, its output
// appended to a log file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

using Environment = std::map<std::string, std::string>;

Environment current_environment();

// The exit status (128 + signal when killed), or -1 with `error` when it could not start.
int run_logged(const std::vector<std::string>& argv, const Environment& env, const std::string& cwd,
               const std::string& log_path, std::string& error);

// The whole text of a file; nullopt when it cannot be opened.
std::optional<std::string> read_file(const std::string& path);

// The directories of a PATH-like list, in order, empty entries left out ("/a::/b" -> /a, /b).
std::vector<std::string> path_list(std::string_view list);

// NAME as a shell would run it with `env`'s PATH: the first executable DIR/NAME; NAME itself when
// it holds a slash; nullopt when no directory has it.
std::optional<std::string> find_program(const std::string& name, const Environment& env);

// The last `lines` lines of a file.
std::string tail_lines(const std::string& path, size_t lines);

// "a 'b c'": argv as a shell would read it back, for messages.
std::string shell_quote(const std::vector<std::string>& argv);

// A new directory `PREFIX-XXXXXX` in the temporary directory of the environment (TMPDIR, TMP,
// TEMP or TEMPDIR, the first set and not empty, as std::filesystem reads them; else /tmp). When
// that is missing, not a directory or not writable, nullopt and `why`, which names the variable
// and what it holds, so that the message says what to fix.
std::optional<std::string> make_temp_directory(std::string_view prefix, std::string& why);

}  // namespace wm
