#include "merger/format/wheel_name.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("wheel file names parse into their parts") {
  std::string why;
  auto w =
      parse_wheel_filename("cuda_core-0.3.0+cu12-1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", why);
  REQUIRE(w);
  CHECK(w->name == "cuda_core");
  CHECK(w->version == "0.3.0+cu12");
  CHECK(w->build == "1");
  CHECK(w->platform == std::vector<std::string>{"manylinux_2_17_x86_64", "manylinux2014_x86_64"});
  CHECK(w->expanded_tags() ==
        std::vector<std::string>{"cp311-cp311-manylinux2014_x86_64", "cp311-cp311-manylinux_2_17_x86_64"});
  CHECK_FALSE(w->suffix_label);
}

TEST_CASE("a .cuNN suffix before .whl is the variant label") {
  std::string why;
  auto w = parse_wheel_filename("pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.cu13.whl", why);
  REQUIRE(w);
  CHECK(w->suffix_label == VariantLabel::cuda(13));
  CHECK(w->platform == std::vector<std::string>{"manylinux_2_28_x86_64"});
  CHECK(w->filename() == "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
}

TEST_CASE("PEP 825 variant wheel names: the label is the last component") {
  std::string why;
  auto w = parse_wheel_filename("pkg-1.0-cp311-cp311-manylinux_2_28_x86_64-cu12.whl", why);
  REQUIRE_MESSAGE(w, why);
  CHECK(w->variant == "cu12");
  CHECK(w->build.empty());
  CHECK(w->platform == std::vector<std::string>{"manylinux_2_28_x86_64"});
  CHECK(w->filename() == "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64-cu12.whl");
  auto both = parse_wheel_filename("pkg-1.0-2-py3-none-any-null.whl", why);
  REQUIRE_MESSAGE(both, why);
  CHECK(both->build == "2");
  CHECK(both->variant == "null");
  CHECK(both->filename() == "pkg-1.0-2-py3-none-any-null.whl");
  auto plain = parse_wheel_filename("pkg-1.0-2-py3-none-any.whl", why);
  REQUIRE(plain);
  CHECK(plain->variant.empty());
  CHECK_FALSE(parse_wheel_filename("pkg-1.0-cp311-cp311-linux_x86_64-CU12.whl", why));
  CHECK(why.find("variant label") != std::string::npos);
  CHECK_FALSE(parse_wheel_filename("pkg-1.0-1-cp311-cp311-linux_x86_64-cu-12.whl", why));
  // A variant label's dots are its own (packaging's [0-9a-z._]{1,16}): no .cu12 suffix after it.
  auto dotted = parse_wheel_filename("pkg-1.0-py3-none-any-gpu.cu12.whl", why);
  REQUIRE(dotted);
  CHECK(dotted->variant == "gpu.cu12");
  CHECK_FALSE(dotted->suffix_label);
  CHECK(dotted->platform == std::vector<std::string>{"any"});
  auto built = parse_wheel_filename("pkg-1.0-1-py3-none-any-a.cu12.whl", why);
  REQUIRE(built);
  CHECK((built->build == "1" && built->variant == "a.cu12" && !built->suffix_label));
  // After platform tags the suffix is still the cuda-python convention's, compressed sets too.
  auto suffixed =
      parse_wheel_filename("pkg-1.0-1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.cu12.whl", why);
  REQUIRE(suffixed);
  CHECK((suffixed->variant.empty() && suffixed->suffix_label && suffixed->suffix_label->str() == "cu12"));
  CHECK(suffixed->platform == std::vector<std::string>{"manylinux2014_x86_64", "manylinux_2_17_x86_64"});
  CHECK(is_variant_label("torch.2_9"));
  CHECK_FALSE(is_variant_label(""));
  CHECK_FALSE(is_variant_label("a-b"));
}

TEST_CASE("malformed file names are refused with a reason") {
  std::string why;
  CHECK_FALSE(parse_wheel_filename("pkg-1.0-cp311-linux_x86_64.whl", why));
  CHECK(why.find("a name of 4 dash-separated parts") != std::string::npos);
  CHECK_FALSE(parse_wheel_filename("pkg.whl", why));  // one part: no plural
  CHECK(why.starts_with("a name of 1 dash-separated part where"));
  CHECK_FALSE(parse_wheel_filename("pkg-one-py3-none-any.whl", why));
  CHECK(why == "the version \"one\", which is not a PEP 440 version");
  CHECK_FALSE(parse_wheel_filename("pkg-1.0-x-cp311-cp311-linux_x86_64.whl", why));
  CHECK(why.find("build tag") != std::string::npos);
  CHECK_FALSE(parse_wheel_filename("pkg-1.0-cp311-cp311-linux_x86_64.zip", why));
  CHECK_FALSE(parse_wheel_filename("pkg-1.0-cp311-cp 311-linux_x86_64.whl", why));
}

TEST_CASE("names normalise as wheel file names do") {
  CHECK(normalize_name("Cuda.Core--Py") == "cuda_core_py");
  CHECK(normalize_name("a_-_b") == "a_b");
}

TEST_CASE("labels and local versions") {
  CHECK(local_version_label("1.0+cu13") == VariantLabel::cuda(13));
  CHECK(local_version_label("1.0+torch210.cu12") == VariantLabel::torch(2, 10, 12));
  CHECK(local_version_label("1.0+x86.64.v3") == VariantLabel::cpu(3));
  CHECK_FALSE(local_version_label("1.0+local"));
  CHECK_FALSE(local_version_label("1.0"));
  CHECK(strip_local_label("1.0+cu13") == "1.0");
  CHECK(strip_local_label("1.0+abc") == "1.0+abc");
}

TEST_CASE("legacy manylinux aliases read as their manylinux_2_x forms") {
  CHECK(parse_platform_tag("manylinux2014_x86_64").str() == "manylinux_2_17_x86_64");
  CHECK(parse_platform_tag("manylinux2010_x86_64").str() == "manylinux_2_12_x86_64");
  CHECK(parse_platform_tag("manylinux1_x86_64").str() == "manylinux_2_5_x86_64");
  CHECK(parse_platform_tag("manylinux_2_28_aarch64").arch == "aarch64");
}

TEST_CASE("merged platforms are the most restrictive, never the union") {
  std::string why;
  auto merged = merge_platforms({{"manylinux_2_17_x86_64", "manylinux2014_x86_64"}, {"manylinux_2_28_x86_64"}}, why);
  REQUIRE(merged);
  CHECK(*merged == std::vector<std::string>{"manylinux_2_28_x86_64"});
  merged = merge_platforms({{"linux_x86_64"}, {"manylinux_2_28_x86_64"}}, why);
  REQUIRE(merged);
  CHECK(*merged == std::vector<std::string>{"linux_x86_64"});
  merged = merge_platforms({{"macosx_11_0_arm64"}, {"macosx_12_0_arm64"}}, why);
  REQUIRE(merged);
  CHECK(*merged == std::vector<std::string>{"macosx_12_0_arm64"});
}

TEST_CASE("builds with the same platform tags keep them exactly") {
  std::string why;
  auto merged = merge_platforms(
      {{"manylinux_2_28_x86_64", "manylinux_2_24_x86_64"}, {"manylinux_2_28_x86_64", "manylinux_2_24_x86_64"}}, why);
  REQUIRE(merged);  // the publisher's order, where every build has it
  CHECK(*merged == std::vector<std::string>{"manylinux_2_28_x86_64", "manylinux_2_24_x86_64"});
  merged = merge_platforms(
      {{"manylinux_2_17_x86_64", "manylinux2014_x86_64"}, {"manylinux2014_x86_64", "manylinux_2_17_x86_64"}}, why);
  REQUIRE(merged);  // orders differ: sorted, whatever the order of the inputs
  CHECK(*merged == std::vector<std::string>{"manylinux2014_x86_64", "manylinux_2_17_x86_64"});
}

TEST_CASE("different architectures or C libraries do not merge") {
  std::string why;
  CHECK_FALSE(merge_platforms({{"manylinux_2_28_x86_64"}, {"manylinux_2_28_aarch64"}}, why));
  CHECK(why.find("aarch64") != std::string::npos);
  CHECK_FALSE(merge_platforms({{"manylinux_2_28_x86_64"}, {"musllinux_1_2_x86_64"}}, why));
  CHECK_FALSE(merge_platforms({{"win_amd64"}, {"linux_x86_64"}}, why));
}

TEST_CASE("a distribution name's CUDA suffix gives the project and the label") {
  auto check = [](std::string_view name, const std::string& base, const std::string& label) {
    CAPTURE(name);
    auto found = name_suffix_label(name);
    REQUIRE(found);
    CHECK(found->base == base);
    CHECK(found->label.str() == label);
    CHECK(found->label.selector() == Selector::cuda);
  };
  check("cupy-cuda12x", "cupy", "cu12");
  check("cupy_cuda13x", "cupy", "cu13");
  check("Cupy-CUDA12", "cupy", "cu12");
  check("nvidia-cuda-runtime-cu12", "nvidia_cuda_runtime", "cu12");
  check("my.pkg_cu130", "my_pkg", "cu130");
  for (std::string_view name : {"cupy", "cupy-cuda", "cupy-cuda12y", "cupy-cu", "cupy-cu012", "cuda12x", "-cu12",
                                "cupy-rocm-7-0", "pkg-cu12x", "pkg-cu1234"}) {
    CAPTURE(name);
    CHECK_FALSE(name_suffix_label(name));
  }
}
