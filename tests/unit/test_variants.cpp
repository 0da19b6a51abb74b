#include "merger/label.hpp"
#include "merger/variants.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace wm;

TEST_CASE("variant properties: a CUDA build needs a driver of its major; other selectors have no provider") {
  std::string why;
  auto cu12 = variant_properties(*VariantLabel::parse("cu12"), why);
  REQUIRE(cu12);
  CHECK(cu12->label == "cu12");
  CHECK(cu12->properties.at("nvidia").at("cuda_version_lower_bound") == std::vector<std::string>{"12"});
  CHECK(cu12->properties.size() == 1);
  CHECK_FALSE(variant_properties(*VariantLabel::parse("x86_64_v3"), why));
  CHECK(why.find("cpu builds have no variant provider") != std::string::npos);
  CHECK_FALSE(variant_properties(*VariantLabel::parse("torch210_cu12"), why));
  CHECK(why.find("torch builds") != std::string::npos);
}

TEST_CASE("variants document: the schema, nvidia's provider, every label; sorted keys, the same bytes for the same builds") {
  std::string why;
  const auto cu12 = *variant_properties(*VariantLabel::parse("cu12"), why);
  const auto cu13 = *variant_properties(*VariantLabel::parse("cu13"), why);
  const std::string both = variants_document({cu12, cu13});
  CHECK(both == variants_document({cu13, cu12}));
  CHECK(both.back() == '\n');
  const auto doc = nlohmann::json::parse(both);
  CHECK(doc.at("$schema") == std::string(kVariantSchema));
  CHECK(doc.at("default-priorities") == nlohmann::json{{"namespace", {"nvidia"}}});
  CHECK(doc.at("providers").at("nvidia").at("plugin-api") == "nvidia_variant_provider.plugin:NvidiaVariantPlugin");
  CHECK(doc.at("variants").size() == 2);
  CHECK(doc.at("variants").at("cu13").at("nvidia").at("cuda_version_lower_bound") == nlohmann::json{"13"});
  // A wheel's own variant.json is the index with its label alone.
  auto one = nlohmann::json::parse(variants_document({cu13}));
  auto expected = doc;
  expected["variants"].erase("cu12");
  CHECK(one == expected);
  CHECK(both.find("\"$schema\"") < both.find("\"default-priorities\""));
}
