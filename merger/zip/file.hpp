// A read-only or write-only file descriptor owned by one object, with positioned I/O that
// several threads may use at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace wm {

class File {
 public:
  File() = default;
  explicit File(int fd) : fd_(fd) {}
  File(File&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  // Opens for reading; on failure returns a closed File and sets `error`.
  static File open_read(const std::string& path, std::string& error);

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  uint64_t size() const;

  // Reads exactly buffer.size() bytes at `offset`; false on a short read or error.
  bool read_at(uint64_t offset, std::span<uint8_t> buffer) const;
  // Writes all of `data` at the current position; false on error (errno is kept).
  bool write_all(std::span<const uint8_t> data) const;
  // Writes all of `data` at `offset`, leaving the current position; false on error.
  bool write_at(uint64_t offset, std::span<const uint8_t> data) const;

 private:
  int fd_ = -1;
};

}  // namespace wm
