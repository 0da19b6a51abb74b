// Raw deflate decoders behind one streaming interface: ISA-L's (fast; built with
// third_party/isal/zlib-code-sets.patch so that it refuses the Huffman code sets zlib refuses)
// and zlib's (the one every Python installer uses, so its verdict and its messages are the
// reference). member_stream.cpp inflates with ISA-L and goes back to zlib where ISA-L refuses
// the data, so a member is accepted exactly when zlib accepts it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace wm {

enum class InflateEngine { isal, zlib };

// The engine stream_member starts with: ISA-L where wheelmerge was built with it, else zlib.
InflateEngine preferred_inflate_engine();
// "ISA-L 2.32.1 (with zlib's Huffman code-set checks)" or "zlib 1.2.13", for messages.
std::string inflate_engine_description(InflateEngine engine);

// CRC-32 (ISO-HDLC, as zip and zlib's crc32() compute it) of `len` bytes, continuing `crc`;
// ISA-L's folding implementation where available.
uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t len);

class RawInflater {
 public:
  enum class Status {
    progress,  // consumed input or produced output; call again
    end,       // the final block ended; `unused` says how much input lies beyond it
    error,     // the data is not valid deflate; `message` says why
  };
  struct Step {
    Status status = Status::progress;
    size_t consumed = 0;  // input bytes taken
    size_t produced = 0;  // output bytes written
    size_t unused = 0;    // with `end`: input bytes given (in this or earlier calls) after the stream's end
    std::string message;  // with `error`
  };

  explicit RawInflater(InflateEngine engine);
  ~RawInflater();
  RawInflater(const RawInflater&) = delete;
  RawInflater& operator=(const RawInflater&) = delete;

  InflateEngine engine() const { return engine_; }
  // Decodes from `in` into `out`. A step that neither consumes nor produces once all input has
  // been given means the stream is truncated.
  Step step(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_len);

 private:
  struct State;
  // One state kept per thread between inflaters: a merge inflates member after member on each
  // worker, and ISA-L's state is ~87 KB.
  static std::unique_ptr<State>& spare_state();
  InflateEngine engine_;
  std::unique_ptr<State> state_;
};

}  // namespace wm
