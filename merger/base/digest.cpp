#include "merger/base/digest.hpp"

#include <openssl/evp.h>

#include <array>
#include <cassert>

namespace wm {

void Digest::CtxFree::operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }

Digest::Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()), md_(md) { EVP_DigestInit_ex(ctx_.get(), md_, nullptr); }

namespace {
constexpr std::string_view kRecordAlgorithmNames[] = {"", "sha256", "sha384", "sha512"};
}  // namespace

std::optional<RecordAlgorithm> parse_record_algorithm(std::string_view name) {
  for (size_t i = 1; i < std::size(kRecordAlgorithmNames); ++i)
    if (name == kRecordAlgorithmNames[i]) return static_cast<RecordAlgorithm>(i);
  return std::nullopt;
}

std::string_view record_algorithm_name(RecordAlgorithm algorithm) {
  return kRecordAlgorithmNames[static_cast<size_t>(algorithm)];
}

Digest Digest::of(RecordAlgorithm algorithm) {
  switch (algorithm) {
    case RecordAlgorithm::sha384:
      return Digest(EVP_sha384());
    case RecordAlgorithm::sha512:
      return Digest(EVP_sha512());
    case RecordAlgorithm::sha256:
    case RecordAlgorithm::none:
      break;
  }
  assert(algorithm == RecordAlgorithm::sha256);
  return Digest(EVP_sha256());
}

std::optional<Digest> Digest::for_record_algorithm(std::string_view name) {
  auto algorithm = parse_record_algorithm(name);
  if (!algorithm) return std::nullopt;
  return of(*algorithm);
}

void Digest::update(std::span<const uint8_t> data) { EVP_DigestUpdate(ctx_.get(), data.data(), data.size()); }

std::vector<uint8_t> Digest::finish() {
  std::vector<uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_.get(), out.data(), &len);
  out.resize(len);
  return out;
}

Sha256 Digest::finish_sha256() {
  assert(EVP_MD_get_type(md_) == NID_sha256);
  Sha256 out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_.get(), out.data(), &len);
  return out;
}

size_t Digest::size() const { return static_cast<size_t>(EVP_MD_get_size(md_)); }

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
}

std::string base64url_nopad(std::span<const uint8_t> data) {
  std::string out;
  out.reserve((data.size() * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  if (size_t rest = data.size() - i; rest > 0) {
    uint32_t v = uint32_t{data[i]} << 16;
    if (rest == 2) v |= uint32_t{data[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::vector<uint8_t>> decode_base64url_nopad(std::string_view text) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (int i = 0; i < 64; ++i) value[static_cast<uint8_t>(kAlphabet[i])] = i;
  if (text.size() % 4 == 1) return std::nullopt;
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value[static_cast<uint8_t>(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  // Canonical form: the bits left over must be zero, or re-encoding would differ.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string sha256_record_hash(std::span<const uint8_t> data) {
  Digest d = Digest::sha256();
  d.update(data);
  return "sha256=" + base64url_nopad(d.finish());
}

}  // namespace wm

namespace wm {
Sha256 sha256_of(std::span<const uint8_t> data) {
  Digest d = Digest::sha256();
  d.update(data);
  return d.finish_sha256();
}
}  // namespace wm
