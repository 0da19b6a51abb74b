#include "merger/format/label.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

using namespace wm;

TEST_CASE("a label is cu and a CUDA major of one to three digits") {
  for (const char* text : {"cu9", "cu12", "cu13", "cu130"}) {
    CAPTURE(text);
    auto label = VariantLabel::parse(text);
    REQUIRE(label);
    CHECK(label->str() == text);
    CHECK(label->selector() == Selector::cuda);
  }
  CHECK(VariantLabel::parse("cu12")->cuda_major() == 12);
  CHECK(VariantLabel::parse("cu130")->cuda_major() == 130);
}

TEST_CASE("what no selector accepts is refused, saying what a label is") {
  struct Case {
    const char* text;
    const char* why;
  };
  const char* cuda = "cu followed by the CUDA major";
  const char* torch =
      "torch, the torch major and minor, plus for a floor, then _cu and the CUDA major or _cpu (torch210_cu12: torch "
      "2.10, CUDA 12; torch210plus_cu13: torch 2.10 or later, CUDA 13; torch210_cpu: a CPU-only torch 2.10)";
  const char* cpu = "x86_64_v and a psABI level from 1 to 4";
  const char* any = "cuNN, torchMmm_cuNN, torchMmmplus_cuNN, torchMmm_cpu or x86_64_vN";
  for (Case c : std::initializer_list<Case>{{"", any},
                                            {"cu", cuda},
                                            {"12", any},
                                            {"CU12", any},
                                            {"cu012", cuda},
                                            {"cu0", cuda},
                                            {"cu1234", cuda},
                                            {"cu1a", cuda},
                                            {"cu-1", cuda},
                                            {"cu+1", cuda},
                                            {" cu12", any},
                                            {"cu12 ", cuda},
                                            {"gpu12", any},
                                            {"torch", torch},
                                            {"torch2", torch},
                                            {"torch2_cu12", torch},
                                            {"torch210", torch},
                                            {"torch210_", torch},
                                            {"torch210_cu", torch},
                                            {"torch210_cu012", torch},
                                            {"torch2010_cu12", torch},
                                            {"torch201_cu12", torch},
                                            {"torch010_cu12", torch},
                                            {"torch210-cu12", torch},
                                            {"torch210_cu12_x", torch},
                                            {"torch2.10_cu12", torch},
                                            {"torch210plus", torch},
                                            {"torch210plusplus_cu12", torch},
                                            {"torchplus_cu12", torch},
                                            {"torch210_plus_cu12", torch},
                                            {"torch210Plus_cu12", torch},
                                            {"torch210_gpu", torch},
                                            {"torch210_cpu12", torch},
                                            {"torch210_CPU", torch},
                                            {"Torch210_cu12", any},
                                            {"x86_64_v0", cpu},
                                            {"x86_64_v5", cpu},
                                            {"x86_64_v", cpu},
                                            {"x86_64_v33", cpu},
                                            {"x86_64_v01", cpu},
                                            {"x86_64", any},
                                            {"x86-64-v3", any},
                                            {"aarch64_v8", any}}) {
    CAPTURE(c.text);
    std::string why;
    CHECK_FALSE(VariantLabel::parse(c.text, why));
    CHECK(why == c.why);
  }
}

TEST_CASE("torch labels name the torch major.minor and the CUDA major") {
  auto label = VariantLabel::parse("torch210_cu12");
  REQUIRE(label);
  CHECK(label->selector() == Selector::torch);
  CHECK(label->torch_version() == std::pair{2, 10});
  CHECK(label->cuda_major() == 12);
  CHECK(VariantLabel::torch(2, 11, 13).str() == "torch211_cu13");
  CHECK(VariantLabel::torch(2, 0, 11).str() == "torch20_cu11");
  CHECK(VariantLabel::parse("torch20_cu11")->torch_version() == std::pair{2, 0});
  // By version, then CUDA major: torch 2.9 before 2.10 though "torch29" > "torch210" as text.
  CHECK(*VariantLabel::parse("torch29_cu12") < *VariantLabel::parse("torch210_cu12"));
  CHECK(*VariantLabel::parse("torch210_cu12") < *VariantLabel::parse("torch210_cu13"));
  CHECK(*VariantLabel::parse("torch210_cu13") < *VariantLabel::parse("torch211_cu12"));
}

TEST_CASE("cpu labels name an x86-64 psABI level from 1 to 4") {
  for (int level = 1; level <= kMaxCpuLevel; ++level) {
    CAPTURE(level);
    auto label = VariantLabel::parse(VariantLabel::cpu(level).str());
    REQUIRE(label);
    CHECK(label->selector() == Selector::cpu);
    CHECK(label->cpu_level() == level);
    CHECK(label->cuda_major() == 0);
  }
  CHECK(VariantLabel::cpu(3).str() == "x86_64_v3");
  CHECK(VariantLabel::cpu(1) < VariantLabel::cpu(4));
}

TEST_CASE("torch floor and CPU-only labels") {
  auto floor = VariantLabel::parse("torch210plus_cu13");
  REQUIRE(floor);
  CHECK(floor->selector() == Selector::torch);
  CHECK(floor->torch_floor());
  CHECK(floor->torch_version() == std::pair{2, 10});
  CHECK(floor->cuda_major() == 13);
  CHECK(VariantLabel::torch(2, 10, 13, true) == *floor);
  auto cpu = VariantLabel::parse("torch210_cpu");
  REQUIRE(cpu);
  CHECK_FALSE(cpu->torch_floor());
  CHECK(cpu->cuda_major() == 0);  // no toolkit
  CHECK(VariantLabel::torch(2, 9, 0).str() == "torch29_cpu");
  CHECK(VariantLabel::parse("torch211plus_cpu")->str() == "torch211plus_cpu");
  CHECK(VariantLabel::from_local_version("torch210plus.cu130")->str() == "torch210plus_cu130");
  CHECK(VariantLabel::parse("torch210plus_cu130")->str().size() == kMaxLabelLength);
  // The CPU build before the CUDA builds of its torch; a higher floor after a lower one.
  CHECK(*cpu < *VariantLabel::parse("torch210_cu12"));
  CHECK(*VariantLabel::parse("torch210plus_cu13") < *VariantLabel::parse("torch211plus_cu13"));
  CHECK(torch_description(*floor) == "torch 2.10 or a later 2.x built with CUDA 13");
  CHECK(torch_description(*cpu) == "a CPU-only torch 2.10");
  CHECK(torch_description(*VariantLabel::parse("torch29_cu12")) == "torch 2.9 built with CUDA 12");
}

TEST_CASE("a local version carries a label with dots for underscores") {
  CHECK(VariantLabel::from_local_version("cu12")->str() == "cu12");
  CHECK(VariantLabel::from_local_version("torch210.cu12")->str() == "torch210_cu12");
  CHECK(VariantLabel::from_local_version("x86.64.v3")->str() == "x86_64_v3");
  CHECK(VariantLabel::from_local_version("torch210_cu12")->str() == "torch210_cu12");
  CHECK_FALSE(VariantLabel::from_local_version("cu12.local"));
  CHECK_FALSE(VariantLabel::from_local_version("CU12"));
}

TEST_CASE("selectors have names, and only these") {
  for (Selector s : {Selector::cuda, Selector::torch, Selector::cpu}) CHECK(parse_selector(selector_name(s)) == s);
  CHECK_FALSE(parse_selector("CUDA"));
  CHECK_FALSE(parse_selector(""));
  CHECK_FALSE(parse_selector("rocm"));
}

TEST_CASE("labels order by major, not by spelling") {
  CHECK(VariantLabel::cuda(9) < VariantLabel::cuda(12));
  CHECK(VariantLabel::cuda(12) < VariantLabel::cuda(13));
  CHECK(*VariantLabel::parse("cu9") < *VariantLabel::parse("cu12"));  // "cu9" > "cu12" as strings
  std::vector<VariantLabel> labels = {VariantLabel::cuda(13), VariantLabel::cuda(9), VariantLabel::cuda(12)};
  std::sort(labels.begin(), labels.end());
  std::vector<std::string> names;
  for (const VariantLabel& l : labels) names.push_back(l.str());
  CHECK(names == std::vector<std::string>{"cu9", "cu12", "cu13"});
}

TEST_CASE("a label round-trips between its text and its major") {
  for (int major : {1, 9, 12, 13, 99, 100, 999}) {
    CAPTURE(major);
    VariantLabel label = VariantLabel::cuda(major);
    CHECK(label.cuda_major() == major);
    auto parsed = VariantLabel::parse(label.str());
    REQUIRE(parsed);
    CHECK(*parsed == label);
    CHECK(parsed->cuda_major() == major);
  }
  CHECK(VariantLabel::cuda(12).str() == "cu12");
  CHECK(selector_name(Selector::cuda) == "cuda");
}

TEST_CASE("the default majors are 12 and 13") { CHECK(default_cuda_majors() == std::vector<int>{12, 13}); }

TEST_CASE("a label is read only from its own spelling, so its text and str() are one") {
  for (const char* text :
       {"cu9", "cu12", "cu130", "torch21_cu12", "torch210_cu12", "torch29_cu9", "x86_64_v1", "x86_64_v4"}) {
    CAPTURE(text);
    auto label = VariantLabel::parse(text);
    REQUIRE(label);
    CHECK(label->str() == text);
  }
  for (const char* text : {"cu012", "cu+12", "torch2_10_cu12", "torch200_cu12", "torch210_cu012", "torch210_cu12x",
                           "x86_64_v03", "x86_64_v3 ", "CU12"}) {
    CAPTURE(text);
    CHECK_FALSE(VariantLabel::parse(text));
  }
}

TEST_CASE("label_strings keeps the order; LabelTextOrder orders by text, as JSON keys are") {
  const std::vector<VariantLabel> labels{VariantLabel::cuda(9), VariantLabel::cuda(12), VariantLabel::cuda(13)};
  CHECK(label_strings(labels) == std::vector<std::string>{"cu9", "cu12", "cu13"});
  CHECK(label_strings({}).empty());
  std::vector<VariantLabel> by_text = labels;
  std::sort(by_text.begin(), by_text.end(), LabelTextOrder());
  CHECK(label_strings(by_text) == std::vector<std::string>{"cu12", "cu13", "cu9"});
  std::sort(by_text.begin(), by_text.end());
  CHECK(by_text == labels);
}
