// inject_tool FILE: FILE with the loader import injected (wm::inject_loader_import) on stdout,
// exit 0; when the injection is refused, the reason on stderr, exit 4. For the differential
// suite tests/integration/loader/test_inject.py, which compares the result with CPython's own reading.
#include "merger/loader.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inject_tool FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "inject_tool: cannot open %s\n", argv[1]);
    return 2;
  }
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string why;
  auto out = wm::inject_loader_import(source, why);
  if (!out) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 4;
  }
  std::fwrite(out->data(), 1, out->size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
