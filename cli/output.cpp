#include "cli/output.hpp"

namespace wm::cli {

nlohmann::json problem_list(const wm::Problems& problems) {
  nlohmann::json list = nlohmann::json::array();
  for (const wm::Problem& p : problems)
    list.push_back({{"kind", wm::kind_name(p.kind)},
                    {"file", wm::printable(p.file)},
                    {"member", wm::printable(p.member)},
                    {"what", wm::printable(p.what)},
                    {"expected", wm::printable(p.expected)},
                    {"found", wm::printable(p.found, p.found_is_log)},
                    {"message", wm::describe(p)}});
  return list;
}

std::string github_data(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else
      out += c;
  }
  return out;
}

std::string github_property(std::string_view text) {
  std::string out;
  for (char c : github_data(text)) {
    if (c == ':')
      out += "%3A";
    else if (c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

std::string no_workflow_commands(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line.compare(first, 2, "::") == 0)
      line = line.substr(0, first) + "\\" + line.substr(first);
    out += line;
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

void to_stderr(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stderr) != text.size()) std::clearerr(stderr);
}

}  // namespace wm::cli
