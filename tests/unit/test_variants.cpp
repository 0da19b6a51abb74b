#include "merger/format/label.hpp"
#include "merger/variants.hpp"
#include "wheel_builder.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

using namespace wm;
using namespace wm::test;

TEST_CASE(
    "variant properties: a CUDA build needs a driver of its major, a CPU build its level; torch has no provider") {
  std::string why;
  auto cu12 = variant_properties(VariantLabel::cuda(12), why);
  REQUIRE(cu12);
  CHECK(cu12->label == "cu12");
  CHECK(cu12->properties.at("nvidia").at("cuda_version_lower_bound") == std::vector<std::string>{"12"});
  CHECK(cu12->properties.size() == 1);
  for (int level = 1; level <= kMaxCpuLevel; ++level) {
    auto cpu = variant_properties(VariantLabel::cpu(level), why);
    REQUIRE(cpu);
    CHECK(cpu->label == "x86_64_v" + std::to_string(level));
    // Its own level alone: v1 .. v3 on a v3 build would match a v2 CPU (any value matches).
    CHECK(cpu->properties == VariantPropertyMap{{"x86_64", {{"level", {"v" + std::to_string(level)}}}}});
  }
  // sm_arch values say nothing about a CPU build.
  CHECK(variant_properties(VariantLabel::cpu(3), why, {"90_real"})->properties.at("x86_64").size() == 1);
  why.clear();
  CHECK_FALSE(variant_properties(VariantLabel::torch(2, 10, 12), why));
  CHECK(why.find("torch builds have no variant provider installers serve") != std::string::npos);
  CHECK(why.find("torch210_cu12") == 0);
}

TEST_CASE("variants document of x86-64 levels: the x86_64 provider uv serves, each level its own value") {
  std::string why;
  std::vector<VariantProperties> levels;
  for (int level : {4, 1, 3}) levels.push_back(*variant_properties(VariantLabel::cpu(level), why));
  const std::string index = variants_document(levels);
  CHECK(variant_index_problem(index) == "");
  const auto doc = nlohmann::json::parse(index);
  CHECK(doc.at("default-priorities") == nlohmann::json{{"namespace", {"x86_64"}}});
  CHECK(doc.at("providers") == nlohmann::json{{"x86_64", {{"requires", {"x86-64-variant-provider"}}}}});
  CHECK(doc.at("variants") == nlohmann::json{{"x86_64_v1", {{"x86_64", {{"level", {"v1"}}}}}},
                                             {"x86_64_v3", {{"x86_64", {{"level", {"v3"}}}}}},
                                             {"x86_64_v4", {{"x86_64", {{"level", {"v4"}}}}}}});
  // Read back by the strict reader as written: the provider entry, the labels, the properties.
  const auto read = parse_variant_document(index, why);
  REQUIRE(read);
  CHECK(read->providers.at("x86_64") == VariantProvider{.requirements = {"x86-64-variant-provider"}});
  CHECK(variant_document_text(*read) == index);
  const std::string one = variants_document({levels[2]});
  CHECK(variant_document_problem(one, "x86_64_v3") == "");
  CHECK(variant_property_strings(one, "x86_64_v3") == std::vector<std::string>{"x86_64 :: level :: v3"});
  CHECK(variant_document_problem(one, "x86_64_v4") ==
        "variants: expected the file name's label \"x86_64_v4\" alone, found [\"x86_64_v3\"]");
  // The label's own level alone: v1 .. v4 on a v3 build would be installed on a v2 CPU.
  auto claimed = nlohmann::json::parse(one);
  claimed["variants"]["x86_64_v3"]["x86_64"]["level"] = {"v1", "v2", "v3", "v4"};
  CHECK(variant_document_problem(claimed.dump(), "x86_64_v3") ==
        "variants.x86_64_v3.x86_64.level: expected [\"v3\"] for the label x86_64_v3 alone, found "
        "[\"v1\",\"v2\",\"v3\",\"v4\"]");
  claimed["variants"]["x86_64_v3"]["x86_64"]["level"] = {"v2"};
  CHECK(variant_document_problem(claimed.dump(), "x86_64_v3").find("found [\"v2\"]") != std::string::npos);
}

TEST_CASE(
    "variants document: the schema, nvidia's provider, every label; sorted keys, the same bytes for the same builds") {
  std::string why;
  const auto cu12 = *variant_properties(VariantLabel::cuda(12), why);
  const auto cu13 = *variant_properties(VariantLabel::cuda(13), why);
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
  const std::string good = variants_document({*variant_properties(VariantLabel::cuda(12), why)});
  CHECK(variant_document_problem(good, "cu12") == "");
  CHECK(variant_index_problem(good) == "");
  CHECK(variant_property_strings(good, "cu12") == std::vector<std::string>{"nvidia :: cuda_version_lower_bound :: 12"});
  CHECK(variant_property_strings(good, "cu13").empty());  // refused: another label
  CHECK(variant_document_problem(good, "cu13") ==
        "variants: expected the file name's label \"cu13\" alone, found [\"cu12\"]");
  auto edited = [&](auto&& edit) {
    auto doc = nlohmann::json::parse(good);
    edit(doc);
    return variant_document_problem(doc.dump(), "cu12");
  };
  CHECK(edited([](auto& d) {
          d["$schema"] = "https://variants-schema.wheelnext.dev/v0.2.0.json";
        }).find("$schema: expected a schema installers know") != std::string::npos);
  CHECK(edited([](auto& d) { d.erase("default-priorities"); }) ==
        "default-priorities: expected a member (uv and variantlib need it), found none");
  CHECK(edited([](auto& d) { d["default-priorities"]["namespace"] = nlohmann::json::array(); }) ==
        "default-priorities.namespace: expected a non-empty list of unique names (a-z, 0-9 and _), found []");
  CHECK(edited([](auto& d) {
          d["default-priorities"]["namespace"] = {"nvidia", "nvidia"};
        }).find("found \"nvidia\" twice") != std::string::npos);
  CHECK(edited([](auto& d) {
          d["variants"]["cu12"]["nvidia"]["cuda_version_lower_bound"] = {"12", "12"};
        }) ==
        "variants.cu12.nvidia.cuda_version_lower_bound: expected a non-empty list of unique values (a-z, 0-9, _ and "
        ".), found \"12\" twice");
  CHECK(edited([](auto& d) {
          d["variants"]["cu12"]["nvidia"]["cuda_version_lower_bound"] = {"Twelve"};
        }).find("found the item \"Twelve\"") != std::string::npos);
  CHECK(edited([](auto& d) { d["variants"]["cu12"]["amd"]["rocm"] = {"6"}; }) ==
        "variants.cu12.amd: expected a namespace of default-priorities.namespace, found \"amd\"");
  CHECK(edited([](auto& d) { d["providers"].erase("nvidia"); }) ==
        "providers: expected an entry for exactly the namespaces of default-priorities.namespace, [\"nvidia\"], found "
        "[]");
  CHECK(edited([](auto& d) { d["variants"]["cu11"] = d["variants"]["cu12"]; }).find("alone") != std::string::npos);
  // A cuNN label means a driver of CUDA N or later: another bound would mislead the installer.
  CHECK(edited([](auto& d) { d["variants"]["cu12"]["nvidia"]["cuda_version_lower_bound"] = {"13"}; }) ==
        "variants.cu12.nvidia.cuda_version_lower_bound: expected [\"12\"] for the label cu12 alone, found [\"13\"]");
  // PEP 825's own schema without providers: variantlib refuses it, and so does uv.
  CHECK(edited([](auto& d) {
          d["$schema"] = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json";
          d.erase("providers");
        }) == "providers: expected a member (uv and variantlib need it), found none");
  CHECK(variant_document_problem("[1]", "cu12") == "the document: expected an object, found a list [1]");
  CHECK(variant_document_problem("{", "cu12") == "the document: expected UTF-8 JSON, found text that does not parse");
  CHECK(variant_document_problem(std::string(100000, '[') + std::string(100000, ']'), "cu12") ==
        "nested more than 16 deep");
  auto null_doc = nlohmann::json::parse(good);
  null_doc["variants"] = {{"null", nlohmann::json::object()}};
  CHECK(variant_document_problem(null_doc.dump(), "null") == "");
  null_doc["variants"]["null"]["nvidia"]["x"] = {"1"};
  CHECK(variant_document_problem(null_doc.dump(), "null") ==
        "variants.null: expected no properties (the null variant), found {\"nvidia\":{\"x\":[\"1\"]}}");
}

TEST_CASE("variant metadata: duplicate keys at any level, a byte order mark, unknown keys") {
  std::string why;
  const std::string good = variants_document({*variant_properties(VariantLabel::cuda(12), why)});
  auto replaced = [&](std::string_view from, std::string_view to) {
    std::string text = good;
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return variant_document_problem(text, "cu12");
  };
  // variantlib keeps the last of each; uv refuses the top level's twice and keeps the last
  // label, feature or namespace: refused at every level.
  CHECK(replaced("\"variants\": {", "\"variants\": {\"cu12\": {}}, \"variants\": {") ==
        "the document: expected each key once, found \"variants\" twice");
  CHECK(
      replaced("\"variants\": {", "\"variants\": {\"cu12\": {\"nvidia\": {\"cuda_version_lower_bound\": [\"99\"]}},") ==
      "variants: expected each key once, found \"cu12\" twice");
  CHECK(replaced("\"cuda_version_lower_bound\": [",
                 "\"cuda_version_lower_bound\": [\"99\"], \"cuda_version_lower_bound\": [") ==
        "variants.cu12.nvidia: expected each key once, found \"cuda_version_lower_bound\" twice");
  CHECK(replaced("\"plugin-api\"", "\"plugin-api\": \"a:b\", \"plugin-api\"") ==
        "providers.nvidia: expected each key once, found \"plugin-api\" twice");
  CHECK(variant_document_problem("\xEF\xBB\xBF" + good, "cu12").find("byte order mark") != std::string::npos);
  CHECK(variant_document_problem(good + "x", "cu12").find("does not parse") != std::string::npos);
  CHECK(variant_document_problem(std::string(kMaxVariantFile + 1, ' '), "cu12").find("more than") != std::string::npos);

  auto edited = [&](auto&& edit) {
    auto doc = nlohmann::json::parse(good);
    edit(doc);
    return variant_document_problem(doc.dump(), "cu12");
  };
  CHECK(edited([](auto& d) { d["extra"] = 1; })
            .starts_with("the document: expected only the keys $schema, default-priorities, providers, variants, found "
                         "the key \"extra\""));
  CHECK(edited([](auto& d) {
          d["default-priorities"]["feature"] = nlohmann::json::object();
        }).starts_with("default-priorities: expected only the keys namespace, found the key \"feature\""));
  CHECK(edited([](auto& d) {
          d["providers"]["nvidia"]["enable-if"] = "sys_platform == 'linux'";
        }).find("found the key \"enable-if\"") != std::string::npos);
  CHECK(edited([](auto& d) {
          d["default-priorities"] = {{"namespace", "nvidia"}};
        }) ==
        "default-priorities.namespace: expected a non-empty list of unique names (a-z, 0-9 and _), found \"nvidia\"");
  CHECK(edited([](auto& d) { d["default-priorities"] = nullptr; }) ==
        "default-priorities: expected an object, found null");
  CHECK(edited([](auto& d) { d["$schema"] = 1; }).starts_with("$schema: expected a schema installers know"));
}

TEST_CASE("variant metadata: provider entries as uv and variantlib read them") {
  std::string why;
  const std::string good = variants_document({*variant_properties(VariantLabel::cuda(12), why)});
  auto provider = [&](nlohmann::json entry) {
    auto doc = nlohmann::json::parse(good);
    doc["providers"]["nvidia"] = std::move(entry);
    return variant_document_problem(doc.dump(), "cu12");
  };
  const std::string req = "nvidia-variant-provider>=0.0.1,<1.0.0";
  CHECK(provider(nlohmann::json::object()) ==
        "providers.nvidia: expected exactly one of requires, static-properties and builtin (uv's provider kinds, "
        "variantlib's rule), found none");
  CHECK(provider({{"requires", {req}}}) == "");
  CHECK(provider({{"requires", {req}}, {"optional", true}}) == "");
  CHECK(provider({{"requires", {req}}, {"optional", "yes"}}) ==
        "providers.nvidia.optional: expected true or false, found \"yes\"");
  CHECK(provider({{"requires", req}}) ==
        "providers.nvidia.requires: expected a non-empty list of PEP 508 requirements, found \"" + req + "\"");
  CHECK(provider({{"requires", nlohmann::json::array()}}).find("found []") != std::string::npos);
  CHECK(provider({{"requires", {"not a req !!"}}})
            .starts_with("providers.nvidia.requires: expected PEP 508 requirements, found \"not a req !!\""));
  CHECK(provider({{"plugin-api", "a.b:C"}}).find("exactly one of") != std::string::npos);
  CHECK(provider({{"builtin", "nvidia"}}) == "");
  CHECK(provider({{"builtin", "nvidia"}, {"requires", {req}}}).find("found more than one") != std::string::npos);
  CHECK(provider({{"builtin", "nvidia"}, {"plugin-api", "a:b"}}) ==
        "providers.nvidia.plugin-api: expected only beside requires, found it beside builtin");
  for (const char* api : {"nvidia_variant_provider.plugin:NvidiaVariantPlugin", "mod", "a.b", "a:b.c", "_x1.y_:Z9"})
    CHECK_MESSAGE(provider({{"requires", {req}}, {"plugin-api", api}}) == "", api);
  for (const char* api :
       {"not a path!", "", "a:", ":b", "a..b", "a.:b", "1a:b", "a:b:c", "a : b", "a.b:c d", "caf\xc3\xa9:x"})
    CHECK_MESSAGE(provider({{"requires", {req}}, {"plugin-api", api}})
                      .starts_with("providers.nvidia.plugin-api: expected a Python object path (module.sub:attr)"),
                  api);
  CHECK(provider({{"requires", {req}}, {"plugin-api", nullptr}}).find("expected a Python object path") !=
        std::string::npos);
  CHECK(provider({{"static-properties", {{"cuda_version_lower_bound", {"12"}}}}}) == "");
  CHECK(provider({{"static-properties", {{"cuda_version_lower_bound", {"12"}}}},
                  {"feature-order", {"cuda_version_lower_bound"}}}) == "");
  CHECK(provider({{"static-properties", {{"a", {"1"}}, {"b", {"2"}}}}}) ==
        "providers.nvidia.feature-order: expected the features of static-properties, [\"a\",\"b\"], found []");
  CHECK(provider({{"static-properties", {{"a", {"1"}}, {"b", {"2"}}}}, {"feature-order", {"b", "a"}}}) == "");
  CHECK(provider({{"static-properties", nlohmann::json::object()}}).find("expected a non-empty object of features") !=
        std::string::npos);
  CHECK(provider({{"static-properties", {{"a", nlohmann::json::array()}}}})
            .find("static-properties.a: expected a non-empty list") != std::string::npos);
  CHECK(provider({{"requires", {req}}, {"feature-order", {"a"}}}) ==
        "providers.nvidia.feature-order: expected only beside static-properties, found it without");
  CHECK(provider({{"build-requires", {req}}}).find("found the key \"build-requires\"") != std::string::npos);
  CHECK(provider("nvidia").starts_with("providers.nvidia: expected an object, found a string"));
}

TEST_CASE("variant metadata: name grammars (variantlib's VALIDATION_*_REGEX, uv's parsers)") {
  std::string why;
  const std::string good = variants_document({*variant_properties(VariantLabel::cuda(12), why)});
  auto with = [&](const std::string& name_space, const std::string& feature, const std::string& value) {
    auto doc = nlohmann::json::parse(good);
    doc["default-priorities"]["namespace"] = {name_space};
    doc["providers"] = {{name_space, doc["providers"]["nvidia"]}};
    // A label of another tool's (cu12 would also have to mean its own CUDA bound).
    doc["variants"] = {{"x1", {{name_space, {{feature, {value}}}}}}};
    return variant_document_problem(doc.dump(), "x1");
  };
  CHECK(with("nvidia", "sm_arch", "9.0") == "");
  CHECK(with("a_1", "b_2", "._x") == "");
  CHECK(with("nvidia", "sm_arch", std::string(300, '9')) == "");  // neither tool bounds a name's length
  CHECK(with("NV", "sm_arch", "9.0").starts_with("default-priorities.namespace: expected"));
  CHECK(with("nv.x", "sm_arch", "9.0").starts_with("default-priorities.namespace: expected"));
  CHECK(with("nvidia", "sm-arch", "9.0") == "variants.x1.nvidia: expected a feature of a-z, 0-9, _, found \"sm-arch\"");
  CHECK(with("nvidia", "sm.arch", "9.0").find("expected a feature") != std::string::npos);
  CHECK(with("nvidia", "sm_arch", "9.0+x").find("found the item \"9.0+x\"") != std::string::npos);
  CHECK(with("nvidia", "sm_arch", "").find("found the item \"\"") != std::string::npos);
  CHECK(with("nvidia", "sm_arch", "caf\xc3\xa9").find("expected a non-empty list of unique values") !=
        std::string::npos);
  auto doc = nlohmann::json::parse(good);
  doc["variants"]["cu12"]["nvidia"]["sm_arch"] = {90};
  CHECK(variant_document_problem(doc.dump(), "cu12").find("found the item 90") != std::string::npos);
  doc = nlohmann::json::parse(good);
  doc["variants"]["cu12"]["nvidia"] = nlohmann::json::object();  // uv: no property; variantlib: refused
  CHECK(variant_document_problem(doc.dump(), "cu12") ==
        "variants.cu12.nvidia: expected a non-empty object of features, found {}");
  doc = nlohmann::json::parse(good);
  doc["variants"] = {{"CU12", doc["variants"]["cu12"]}};
  CHECK(variant_document_problem(doc.dump(), "cu12") ==
        "variants: expected a label of a-z, 0-9, _ and ., found \"CU12\"");
  doc["variants"] = nlohmann::json::object();
  CHECK(variant_index_problem(doc.dump()) == "variants: expected at least one variant, found none");
}

TEST_CASE("variant metadata: the document read serialises and reads back the same") {
  std::string why;
  const std::string good = variants_document({*variant_properties(VariantLabel::cuda(12), why, {"8.0", "9.0"}),
                                              *variant_properties(VariantLabel::cuda(13), why)});
  auto doc = parse_variant_document(good, why);
  REQUIRE(doc);
  CHECK(variant_document_text(*doc) == good);  // the writer's bytes
  auto again = parse_variant_document(variant_document_text(*doc), why);
  REQUIRE(again);
  CHECK(*again == *doc);
  CHECK(doc->providers.at("nvidia").plugin_api == "nvidia_variant_provider.plugin:NvidiaVariantPlugin");
  CHECK(doc->variants.at("cu12").at("nvidia").at("sm_arch") == std::vector<std::string>{"8.0", "9.0"});
}

TEST_CASE("variants: the variant wheels come in label order, cu9 before cu12, whatever the order of the inputs") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  const std::string cu9 = cuda_build(9).write(dir.sub("in"));
  const DosTime time = dos_time_from_epoch(1700000000);
  Problems problems;
  auto result = write_variants({{cu12, ""}, {cu9, ""}}, {}, dir.sub("out").string(), time, problems);
  REQUIRE_MESSAGE(result, (problems.empty() ? std::string() : describe(problems.front())));
  CHECK(result->labels == std::vector<VariantLabel>{VariantLabel::cuda(9), VariantLabel::cuda(12)});
  REQUIRE(result->wheels.size() == 2);
  CHECK(result->wheels[0].ends_with("pkg-1.0-cp311-cp311-linux_x86_64-cu9.whl"));
  CHECK(result->wheels[1].ends_with("pkg-1.0-cp311-cp311-linux_x86_64-cu12.whl"));
  CHECK(result->sm_arch == std::vector<std::vector<std::string>>{{}, {}});
  CHECK(result->index.ends_with("pkg-1.0-variants.json"));
}

TEST_CASE("variants: an input without a label, or one with no properties, is refused before anything is written") {
  TempDir dir;
  const std::string cu12 = cuda_build(12).write(dir.sub("in"));
  WheelBuilder plain = cuda_build(13);
  plain.filename = "pkg-1.0-cp311-cp311-linux_x86_64.whl";
  const std::string unlabelled = plain.write(dir.sub("plain"));
  const fs::path out = dir.sub("out");
  const DosTime time = dos_time_from_epoch(1700000000);
  Problems problems;
  CHECK_FALSE(write_variants({{unlabelled, ""}, {cu12, ""}}, {}, out.string(), time, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].what == "no variant label");
  CHECK(problems[0].file == unlabelled);
  problems.clear();
  WheelBuilder plain12 = cuda_build(12);
  plain12.filename = plain.filename;
  const std::string other = plain12.write(dir.sub("plain12"));
  CHECK_FALSE(
      write_variants({{unlabelled, "torch211_cu13"}, {other, "torch210_cu12"}}, {}, out.string(), time, problems));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].what == "no variant properties for this build's label");
  CHECK(problems[0].file == other);  // in label order: torch210_cu12 first
  CHECK(problems[0].expected == "a CUDA label (cuNN) or an x86-64 level (x86_64_vN)");
  CHECK(problems[1].found.starts_with("torch211_cu13 (torch builds have no variant provider"));
  CHECK(listing(out).empty());
}

TEST_CASE("variants: x86-64 level builds get a variant wheel each, marked with their level, and no sm_arch") {
  TempDir dir;
  std::vector<WheelInput> inputs;
  for (int level : {3, 1}) {
    WheelBuilder b = cuda_build(12);
    b.filename = "pkg-1.0-cp311-cp311-linux_x86_64.whl";
    b.files[kCoreModule] = "extension module built for x86-64-v" + std::to_string(level);
    inputs.push_back({b.write(dir.sub("in" + std::to_string(level))), "x86_64_v" + std::to_string(level)});
  }
  const DosTime time = dos_time_from_epoch(1700000000);
  Problems problems;
  VariantsOptions options;
  options.with_merged = true;
  auto result = write_variants(inputs, options, dir.sub("out").string(), time, problems);
  REQUIRE_MESSAGE(result, (problems.empty() ? std::string() : describe(problems.front())));
  CHECK(result->labels == std::vector<VariantLabel>{VariantLabel::cpu(1), VariantLabel::cpu(3)});
  REQUIRE(result->wheels.size() == 2);
  CHECK(result->wheels[0].ends_with("pkg-1.0-cp311-cp311-linux_x86_64-x86_64_v1.whl"));
  CHECK(result->wheels[1].ends_with("pkg-1.0-cp311-cp311-linux_x86_64-x86_64_v3.whl"));
  CHECK(result->sm_arch == std::vector<std::vector<std::string>>{{}, {}});
  REQUIRE(result->merged);
  CHECK(result->merged->ends_with("pkg-1.0-cp311-cp311-linux_x86_64.whl"));
  CHECK(result->warnings.empty());
  std::ifstream in(result->index, std::ios::binary);
  const std::string index((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(variant_index_problem(index) == "");
  CHECK(nlohmann::json::parse(index).at("variants") ==
        nlohmann::json{{"x86_64_v1", {{"x86_64", {{"level", {"v1"}}}}}},
                       {"x86_64_v3", {{"x86_64", {{"level", {"v3"}}}}}}});
}
