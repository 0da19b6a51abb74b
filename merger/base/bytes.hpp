// Little-endian field access over a byte range, and byte appending, for the zip, ELF and fat
// binary formats; a range of a file's bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

// [offset, offset + size) of a file.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

class ByteView {
 public:
  ByteView(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  ByteView(const std::vector<uint8_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT

  size_t size() const { return size_; }
  const uint8_t* data() const { return data_; }
  uint16_t u16(size_t at) const { return static_cast<uint16_t>(data_[at] | (data_[at + 1] << 8)); }
  uint32_t u32(size_t at) const { return u16(at) | (uint32_t{u16(at + 2)} << 16); }
  uint64_t u64(size_t at) const { return u32(at) | (uint64_t{u32(at + 4)} << 32); }
  ByteView sub(size_t at, size_t len) const { return ByteView(data_ + at, len); }
  std::string str() const { return std::string(reinterpret_cast<const char*>(data_), size_); }
  std::string_view text() const { return std::string_view(reinterpret_cast<const char*>(data_), size_); }
  bool find_u32(uint32_t value) const {
    for (size_t i = 0; i + 4 <= size_; ++i)
      if (u32(i) == value) return true;
    return false;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

inline void put16(std::vector<uint8_t>& out, uint64_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
inline void put32(std::vector<uint8_t>& out, uint64_t v) {
  put16(out, v & 0xFFFF);
  put16(out, (v >> 16) & 0xFFFF);
}
inline void put64(std::vector<uint8_t>& out, uint64_t v) {
  put32(out, v & 0xFFFFFFFF);
  put32(out, v >> 32);
}
inline void put_bytes(std::vector<uint8_t>& out, std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }

inline std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace wm
