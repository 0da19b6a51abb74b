// `inspect`, `verify` and the hidden `loader`: wheels read and checked, reports out.
#include "cli/commands.hpp"

#include "cli/render.hpp"
#include "merger/format/manifest.hpp"
#include "merger/loader.hpp"
#include "merger/report.hpp"
#include "merger/version.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace wm::cli {

namespace {

int run_verify(const Output& out, const std::vector<std::string>& paths) {
  if (auto missing = unreadable_inputs(paths); !missing.empty()) return out.fail(missing);
  nlohmann::json reports = nlohmann::json::array();
  wm::Problems all;
  for (const std::string& path : paths) {
    wm::Problems problems;
    auto report = wm::verify_wheel(path, problems);
    if (report) {
      for (const std::string& w : report->warnings) out.warning(w);
      out.info(fmt::format("{}: valid{}", path,
                           report->variants_index ? " variants index"
                           : report->merged()     ? " merged wheel"
                                                  : " wheel"));
      reports.push_back(wm::cli::to_json(*report));
    } else {
      for (const wm::Problem& p : problems) out.error(p);
      reports.push_back({{"file", path}, {"valid", false}, {"problems", problem_list(problems)}});
      all.insert(all.end(), problems.begin(), problems.end());
    }
  }
  if (out.json) wm::cli::print_out("{}\n", nlohmann::json{{"wheels", reports}}.dump(2));
  return wm::exit_code(all);
}

int run_inspect(const Output& out, const std::string& path, bool gpu_code) {
  if (auto missing = unreadable_inputs(std::vector<std::string>{path}); !missing.empty()) return out.fail(missing);
  wm::Problems problems;
  auto report = wm::inspect_wheel(path, problems, gpu_code);
  if (!report) return out.fail(problems);
  for (const std::string& w : report->warnings) out.warning(w);
  if (out.json)
    wm::cli::print_out("{}\n", wm::cli::to_json(*report).dump(2));
  else
    wm::cli::print_text(*report);
  return 0;
}

}  // namespace

Subcommand add_inspect(CLI::App& app, Output& out) {
  auto path = std::make_shared<std::string>();
  auto* inspect = app.add_subcommand("inspect", "validate a wheel and show its variants");
  inspect->add_option("wheel", *path, "the wheel")->required();
  auto gpu_code = std::make_shared<bool>(false);
  inspect->add_flag("--gpu-code", *gpu_code,
                    "also read the GPU code of each file's CUDA fat binaries and the sm_arch values of each build");
  add_common(inspect, out, "leave out warnings (the report is printed still)", {},
             "print the report as JSON on stdout");
  inspect->footer(examples(
      {{"wheelmerge inspect dist/pkg-1.0-cp312-cp312-linux_x86_64.whl", "the wheel's tags, variants and loaders"},
       {"wheelmerge inspect --gpu-code --json dist/pkg-1.0-cp312-cp312-linux_x86_64.whl",
        "also the GPU architectures each build has code for, as JSON"}}));
  return {inspect, [&out, path, gpu_code] { return run_inspect(out, *path, *gpu_code); }};
}

Subcommand add_verify(CLI::App& app, Output& out) {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto* verify = app.add_subcommand("verify", "check wheels strictly: zip structure, names, hashes, metadata, loaders");
  verify->add_option("wheels", *paths, "the wheels")->required();
  add_common(verify, out, "print only errors (no \"valid\" lines or warnings)");
  verify->footer(
      examples({{"wheelmerge verify dist/*.whl", "check every wheel in dist/; exit status 3 if one is invalid"}}));
  return {verify, [&out, paths] { return run_verify(out, *paths); }};
}

// `wheelmerge loader MANIFEST.json -o DIR` (not listed in --help): writes the loader and rules
// module a merge would give a package with that manifest (the JSON of `inspect --json`'s
// loaders, docs/interfaces.md), so that they can be tested and read without a merge.
Subcommand add_loader(CLI::App& app, Output& out) {
  struct Args {
    std::string manifest, out_dir = ".";
  };
  auto a = std::make_shared<Args>();
  auto* loader = app.add_subcommand("loader", "write the loader of a manifest (for tests)")->group("");
  loader->add_option("manifest", a->manifest, "the manifest as JSON")->required();
  loader->add_option("-o,--output", a->out_dir, "the directory to write _wheelmerge.py and _wheelmerge_rules.py into");
  add_common(loader, out, "print only errors");
  return {loader, [&out, a] {
            std::ifstream in(a->manifest, std::ios::binary);
            std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            std::string why;
            auto manifest = in ? wm::LoaderManifest::parse(json, why) : std::nullopt;
            if (!manifest)
              return out.fail({{wm::ProblemKind::usage,
                                a->manifest,
                                {},
                                in ? fmt::format("not a loader manifest of format {}", wm::LoaderManifest::kFormat)
                                   : "cannot read the manifest",
                                {},
                                in ? why : std::string(std::strerror(errno))}});
            if (manifest->wheelmerge.empty()) manifest->wheelmerge = std::string(wm::kVersion);
            for (const auto& [name, text] :
                 {std::pair{std::string(wm::kLoaderModule), wm::render_loader(*manifest)},
                  std::pair{std::string(wm::kRulesModule), wm::render_rules(manifest->selector, manifest->package)}}) {
              std::ofstream file(a->out_dir + "/" + name, std::ios::binary | std::ios::trunc);
              file << text;
              if (!file.flush())
                return out.fail(
                    {{wm::ProblemKind::other, a->out_dir + "/" + name, {}, "cannot write", {}, std::strerror(errno)}});
            }
            return 0;
          }};
}

}  // namespace wm::cli
