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

TEST_CASE("variant.json as the strict reader checks it") {
  std::string why;
  const std::string good = variants_document({*variant_properties(*VariantLabel::parse("cu12"), why)});
  CHECK(variant_document_problem(good, "cu12") == "");
  CHECK(variant_property_strings(good, "cu12") == std::vector<std::string>{"nvidia :: cuda_version_lower_bound :: 12"});
  CHECK(variant_property_strings(good, "cu13").empty());  // refused: another label
  CHECK(variant_document_problem(good, "cu13").find("not the file name's label \"cu13\" alone") != std::string::npos);
  auto edited = [&](auto&& edit) {
    auto doc = nlohmann::json::parse(good);
    edit(doc);
    return variant_document_problem(doc.dump(), "cu12");
  };
  CHECK(edited([](auto& d) { d["$schema"] = "https://variants-schema.wheelnext.dev/v0.2.0.json"; }).find("not a schema installers know") !=
        std::string::npos);
  CHECK(edited([](auto& d) { d.erase("default-priorities"); }) == "no default-priorities.namespace");
  CHECK(edited([](auto& d) { d["default-priorities"]["namespace"] = nlohmann::json::array(); }).find("not a non-empty list") !=
        std::string::npos);
  CHECK(edited([](auto& d) { d["default-priorities"]["namespace"] = {"nvidia", "nvidia"}; }).find("twice") != std::string::npos);
  CHECK(edited([](auto& d) { d["variants"]["cu12"]["nvidia"]["cuda_version_lower_bound"] = {"12", "12"}; }).find("twice") !=
        std::string::npos);
  CHECK(edited([](auto& d) { d["variants"]["cu12"]["nvidia"]["cuda_version_lower_bound"] = {"Twelve"}; }).find("names are made of") !=
        std::string::npos);
  CHECK(edited([](auto& d) { d["variants"]["cu12"]["amd"]["rocm"] = {"6"}; }) ==
        "namespace amd is not in default-priorities.namespace");
  CHECK(edited([](auto& d) { d["providers"].erase("nvidia"); }).find("the same namespaces, as variantlib requires") !=
        std::string::npos);
  CHECK(edited([](auto& d) { d["variants"]["cu11"] = d["variants"]["cu12"]; }).find("alone") != std::string::npos);
  // PEP 825's own schema needs no providers.
  CHECK(edited([](auto& d) {
          d["$schema"] = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json";
          d.erase("providers");
        }) == "");
  CHECK(variant_document_problem("[1]", "cu12") == "not a JSON object");
  CHECK(variant_document_problem("{", "cu12") == "not a JSON object");
  CHECK(variant_document_problem(std::string(100000, '[') + std::string(100000, ']'), "cu12") == "nested more than 16 deep");
  auto null_doc = nlohmann::json::parse(good);
  null_doc["variants"] = {{"null", nlohmann::json::object()}};
  CHECK(variant_document_problem(null_doc.dump(), "null") == "");
  null_doc["variants"]["null"]["nvidia"]["x"] = {"1"};
  CHECK(variant_document_problem(null_doc.dump(), "null") == "the null variant has properties");
}
