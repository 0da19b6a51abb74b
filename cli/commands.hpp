// The commands, each family in its own file: the options a command takes, bound to arguments
// its runner owns, and the run that turns them into a call of the library and its output.
// cli/main.cpp lists them in the order --help shows them.
#pragma once

#include "cli/arguments.hpp"
#include "cli/output.hpp"

#include <CLI/CLI.hpp>

namespace wm::cli {

// merge_commands.cpp: merge, variants.
Subcommand add_merge(CLI::App& app, Output& out);
Subcommand add_variants(CLI::App& app, Output& out);
// build_commands.cpp: build, toolkit, config.
Subcommand add_build(CLI::App& app, Output& out);
Subcommand add_toolkit(CLI::App& app, Output& out);
Subcommand add_config(CLI::App& app, Output& out);
// check_commands.cpp: inspect, verify, and the hidden loader.
Subcommand add_inspect(CLI::App& app, Output& out);
Subcommand add_verify(CLI::App& app, Output& out);
Subcommand add_loader(CLI::App& app, Output& out);
// ci_commands.cpp: ci init, ci plan (after add_ci, under its `ci`).
Subcommand add_ci(CLI::App& app, Output& out);
Subcommand add_ci_plan(CLI::App& app, Output& out);

}  // namespace wm::cli
