#include "merger/base/bytes.hpp"
#include "merger/base/digest.hpp"

#include <doctest/doctest.h>

using namespace wm;

TEST_CASE("sha256 in RECORD form") {
  // python: base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).rstrip(b"=")
  CHECK(sha256_record_hash(as_bytes("")) == "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  CHECK(sha256_record_hash(as_bytes("abc")) == "sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  const Sha256 digest = sha256_of(as_bytes("abc"));
  CHECK(base64url_nopad(digest) == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  Digest streamed = Digest::sha256();
  streamed.update(as_bytes("ab"));
  streamed.update(as_bytes("c"));
  CHECK(streamed.finish_sha256() == digest);
}

TEST_CASE("base64 round trip and canonical decoding") {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "\xff\xfe\x00"}) {
    auto encoded = base64url_nopad(as_bytes(s));
    auto decoded = decode_base64url_nopad(encoded);
    REQUIRE(decoded);
    CHECK(std::string(decoded->begin(), decoded->end()) == s);
  }
  CHECK_FALSE(decode_base64url_nopad("ab=="));  // padding
  CHECK_FALSE(decode_base64url_nopad("a+b/"));  // not the urlsafe alphabet
  CHECK_FALSE(decode_base64url_nopad("a"));
  CHECK_FALSE(decode_base64url_nopad("YR"));  // non-zero leftover bits
}

TEST_CASE("only strong RECORD algorithms") {
  CHECK(Digest::for_record_algorithm("sha256"));
  CHECK(Digest::for_record_algorithm("sha512")->size() == 64);
  CHECK_FALSE(Digest::for_record_algorithm("md5"));
  CHECK_FALSE(Digest::for_record_algorithm("sha1"));
  CHECK_FALSE(Digest::for_record_algorithm("blake3"));
  CHECK_FALSE(parse_record_algorithm("SHA256"));
  CHECK_FALSE(parse_record_algorithm(""));
  for (RecordAlgorithm a : {RecordAlgorithm::sha256, RecordAlgorithm::sha384, RecordAlgorithm::sha512}) {
    CHECK(parse_record_algorithm(record_algorithm_name(a)) == a);
    CHECK(Digest::of(a).size() == Digest::for_record_algorithm(record_algorithm_name(a))->size());
  }
  CHECK(Digest::of(RecordAlgorithm::sha384).size() == 48);
}
