#include "plan.hpp"

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
