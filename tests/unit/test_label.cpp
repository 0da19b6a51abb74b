#include "merger/label.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
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
  for (const char* text : {"", "cu", "12", "CU12", "cu012", "cu0", "cu1234", "cu1a", "cu-1", "cu+1", " cu12", "cu12 ", "gpu12"}) {
    CAPTURE(text);
    std::string why;
    CHECK_FALSE(VariantLabel::parse(text, why));
    CHECK(why == "cu followed by the CUDA major");
  }
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

TEST_CASE("the default majors are 12 and 13") {
  CHECK(default_cuda_majors() == std::vector<int>{12, 13});
}
