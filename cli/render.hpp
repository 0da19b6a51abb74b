// Reports rendered for people (text) and for tools (JSON, the `--json` schema of
// docs/interfaces.md).
#pragma once

#include "merger/report.hpp"

#include <nlohmann/json.hpp>

namespace wm::cli {

nlohmann::json to_json(const VerifyReport& report);
nlohmann::json to_json(const InspectReport& report);
// `inspect`'s text form, on stdout.
void print_text(const InspectReport& report);

}  // namespace wm::cli
