// Streaming message digests (OpenSSL EVP) and the urlsafe base64 without padding that RECORD uses.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

using EVP_MD_CTX = struct evp_md_ctx_st;
using EVP_MD = struct evp_md_st;

namespace wm {

// The hash algorithms RECORD may use (the wheel spec asks for sha256 or stronger; installers
// accept the hashlib-guaranteed ones); `none` for a file RECORD gives no hash (RECORD's own row,
// signature files).
enum class RecordAlgorithm : uint8_t { none, sha256, sha384, sha512 };
// nullopt for weak (md5, sha1) and unknown names.
std::optional<RecordAlgorithm> parse_record_algorithm(std::string_view name);
std::string_view record_algorithm_name(RecordAlgorithm algorithm);  // "sha256"; "" for none

// A SHA-256 digest, as bytes (its RECORD form, urlsafe base64, is 43 characters more to keep).
using Sha256 = std::array<uint8_t, 32>;

class Digest {
 public:
  static Digest of(RecordAlgorithm algorithm);  // not `none`
  // The algorithms RECORD may use; nullopt for weak (md5, sha1) and unknown ones.
  static std::optional<Digest> for_record_algorithm(std::string_view name);
  static Digest sha256() { return of(RecordAlgorithm::sha256); }

  void update(std::span<const uint8_t> data);
  std::vector<uint8_t> finish();
  Sha256 finish_sha256();  // finish() of a sha256 Digest, without a heap block
  size_t size() const;     // digest length in bytes

 private:
  explicit Digest(const EVP_MD* md);
  struct CtxFree {
    void operator()(EVP_MD_CTX* ctx) const;
  };
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx_;
  const EVP_MD* md_;
};

std::string base64url_nopad(std::span<const uint8_t> data);
// nullopt when `text` is not canonical urlsafe base64 without padding.
std::optional<std::vector<uint8_t>> decode_base64url_nopad(std::string_view text);

std::string sha256_record_hash(std::span<const uint8_t> data);  // "sha256=..."
Sha256 sha256_of(std::span<const uint8_t> data);

}  // namespace wm
