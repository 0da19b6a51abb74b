// Reads PEP 508 requirements, one a line, from stdin and writes one JSON line for each:
//   {"ok": true, "text": <printed>, "with_extra": <printed, made conditional on the extra>}
//   {"ok": false, "error": <why>}
// For tests/integration/merge/test_requirements.py, which compares the verdicts and printed forms
// with Python's packaging. Usage: requirement_tool [--extra NAME]   (NAME defaults to cu12)
#include "merger/format/requirement.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  std::string extra = "cu12";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--extra" && i + 1 < argc) {
      extra = argv[++i];
    } else {
      std::fprintf(stderr, "usage: requirement_tool [--extra NAME] < requirements\n");
      return 2;
    }
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json out;
    std::string error;
    if (auto r = wm::parse_requirement(line, error)) {
      out = {{"ok", true}, {"text", r->to_string()}, {"with_extra", wm::require_for_extra(*r, extra).to_string()}};
    } else {
      out = {{"ok", false}, {"error", error}};
    }
    // Errors quote the input, which need not be UTF-8.
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  return std::cout.good() ? 0 : 1;
}
