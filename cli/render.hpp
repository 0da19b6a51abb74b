// Reports rendered for people (text) and for tools (JSON, the `--json` schema of
// docs/interfaces.md).
#pragma once

#include "merger/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string_view>
#include <utility>

namespace wm::cli {

// The command's output on stdout. A write that fails (a closed stdout, a full disk, a reader
// gone) is kept, not thrown: the command finishes, then main reports it and exits non-zero
// (stdout_error).
void to_stdout(std::string_view text);
template <typename... T>
void print_out(fmt::format_string<T...> format, T&&... args) {
  to_stdout(fmt::format(format, std::forward<T>(args)...));
}
// errno of the first write to stdout that failed, flushing what is buffered first; 0 when none did.
int stdout_error();

nlohmann::json to_json(const VerifyReport& report);
nlohmann::json to_json(const InspectReport& report);
// `inspect`'s text form, on stdout.
void print_text(const InspectReport& report);

}  // namespace wm::cli
