#include "merger/plan.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("variant files keep their directory and carry the label in their name") {
  CHECK(labelled_path("pkg/_core.cpython-311-x86_64-linux-gnu.so", "cu12") ==
        "pkg/_core.cu12.cpython-311-x86_64-linux-gnu.so");
  CHECK(labelled_path("pkg.libs/libcudart-1a2b.so.12", "cu12") == "pkg.libs/libcudart-1a2b.cu12.so.12");
  CHECK(labelled_path("pkg/kernels/x.cubin", "cu13") == "pkg/kernels/x.cu13.cubin");
  CHECK(labelled_path("pkg/data", "cu13") == "pkg/data.cu13");
  CHECK(labelled_path(".hidden", "cu13") == ".hidden.cu13");
}

TEST_CASE("private libraries are preloaded dependencies first") {
  ElfInfo a{true, "liba.so.1", {"libb.so.1", "libc.so.6"}};
  ElfInfo b{true, "libb.so.1", {"libc.so.1"}};
  ElfInfo c{true, "libc.so.1", {}};
  CHECK(preload_order({&a, &b, &c}) == std::vector<size_t>{2, 1, 0});
  CHECK(preload_order({&c, &b, &a}) == std::vector<size_t>{0, 1, 2});
  // Independent libraries keep the given order; a cycle is broken in it.
  ElfInfo x{true, "libx.so", {"liby.so"}}, y{true, "liby.so", {"libx.so"}};
  CHECK(preload_order({&x, &y}) == std::vector<size_t>{0, 1});
  CHECK(preload_order({&y, &x, &c}) == std::vector<size_t>{2, 0, 1});
}

TEST_CASE("a long chain of private libraries is ordered in n log n") {
  const size_t n = 20000;  // lib0 needs lib1 needs ... lib19999
  std::vector<ElfInfo> infos(n);
  for (size_t i = 0; i < n; ++i) {
    infos[i].shared_object = true;
    infos[i].soname = "lib" + std::to_string(i) + ".so";
    if (i + 1 < n) infos[i].needed = {"lib" + std::to_string(i + 1) + ".so"};
  }
  std::vector<const ElfInfo*> libs;
  for (const ElfInfo& info : infos) libs.push_back(&info);
  std::vector<size_t> order = preload_order(libs);
  REQUIRE(order.size() == n);
  for (size_t k = 0; k < n; ++k) CHECK_EQ(order[k], n - 1 - k);
}
