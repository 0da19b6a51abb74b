// The variant metadata reader (parse_variant_document) over arbitrary bytes. Properties: no
// crash; a document refused says why; a document read serialises (variant_document_text) to
// text the reader reads back as the same document, and serialising that gives the same bytes;
// the wheel check (variant_document_problem) and the index check agree with the reader, the
// wheel check refusing a label of wheelmerge's kinds whose own property the document does not give.
#include "fuzz_common.hpp"
#include "merger/format/variant_metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto doc = wm::parse_variant_document(text, why);
  if (!doc) {
    FUZZ_CHECK(!why.empty(), "a document refused without a reason");
    FUZZ_CHECK(!wm::variant_index_problem(text).empty(), "the index check accepts what the reader refuses");
    return 0;
  }
  const std::string written = wm::variant_document_text(*doc);
  std::string again_why;
  const auto again = wm::parse_variant_document(written, again_why);
  FUZZ_CHECK(again.has_value(), "the serialised document is refused: " + again_why);
  FUZZ_CHECK(*again == *doc, "the serialised document reads back as another");
  FUZZ_CHECK(wm::variant_document_text(*again) == written, "serialising is not stable");
  FUZZ_CHECK(wm::variant_index_problem(text).empty() == !doc->variants.empty(), "the index check disagrees");
  if (doc->variants.size() == 1) {
    // Refused for its own label exactly when the label is of wheelmerge's kinds and the
    // document does not give that label's property, alone.
    const auto& [label, properties] = *doc->variants.begin();
    bool says_its_property = true;
    if (const auto property = wm::label_property(label)) {
      const auto ns = properties.find(property->name_space);
      says_its_property = ns != properties.end() && ns->second.count(property->feature) &&
                          ns->second.at(property->feature) == std::vector<std::string>{property->value};
    }
    FUZZ_CHECK(wm::variant_document_problem(text, label).empty() == says_its_property,
               "the wheel check disagrees with the label's own property");
  }
  return 0;
}
