#include "merger/zip/inflate.hpp"

#include <fmt/format.h>
#include <zlib.h>

#if WHEELMERGE_WITH_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif

#include <limits>

namespace wm {

namespace {
// Both libraries count in 32 bits; steps are bounded by the caller's buffers anyway.
constexpr size_t kMaxStep = std::numeric_limits<uint32_t>::max();
}  // namespace

struct RawInflater::State {
  z_stream z{};
  bool z_open = false;
#if WHEELMERGE_WITH_ISAL
  // Not zeroed: isal_inflate_init sets up what inflating reads, and zeroing all of it per member
  // was a twentieth of a many-small-member merge.
  inflate_state isal;
#endif
};

std::unique_ptr<RawInflater::State>& RawInflater::spare_state() {
  thread_local std::unique_ptr<State> spare;
  return spare;
}

InflateEngine preferred_inflate_engine() {
#if WHEELMERGE_WITH_ISAL
  return InflateEngine::isal;
#else
  return InflateEngine::zlib;
#endif
}

std::string inflate_engine_description(InflateEngine engine) {
  if (engine == InflateEngine::zlib) return fmt::format("zlib {}", zlibVersion());
  return "ISA-L 2.32.1 (with zlib's Huffman code-set checks)";
}

uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t len) {
#if WHEELMERGE_WITH_ISAL
  return crc32_gzip_refl(crc, data, len);  // chunked by the callers' buffers: len < 4 GiB
#else
  while (len > 0) {
    uInt n = static_cast<uInt>(std::min<size_t>(len, std::numeric_limits<uInt>::max()));
    crc = static_cast<uint32_t>(::crc32(crc, data, n));
    data += n;
    len -= n;
  }
  return crc;
#endif
}

RawInflater::RawInflater(InflateEngine engine)
    : engine_(engine), state_(spare_state() ? std::move(spare_state()) : std::unique_ptr<State>(new State)) {
  state_->z = z_stream{};
  state_->z_open = false;
#if WHEELMERGE_WITH_ISAL
  if (engine_ == InflateEngine::isal) {
    isal_inflate_init(&state_->isal);
    state_->isal.crc_flag = ISAL_DEFLATE;  // raw deflate; the CRC is the caller's
    return;
  }
#else
  engine_ = InflateEngine::zlib;
#endif
  if (inflateInit2(&state_->z, -MAX_WBITS) != Z_OK) throw std::bad_alloc();
  state_->z_open = true;
}

RawInflater::~RawInflater() {
  if (state_->z_open) inflateEnd(&state_->z);
  if (!spare_state()) spare_state() = std::move(state_);
}

RawInflater::Step RawInflater::step(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_len) {
  in_len = std::min(in_len, kMaxStep);
  out_len = std::min(out_len, kMaxStep);
  Step s;
#if WHEELMERGE_WITH_ISAL
  if (engine_ == InflateEngine::isal) {
    inflate_state& st = state_->isal;
    st.next_in = const_cast<uint8_t*>(in);
    st.avail_in = static_cast<uint32_t>(in_len);
    st.next_out = out;
    st.avail_out = static_cast<uint32_t>(out_len);
    int rc = isal_inflate(&st);
    s.consumed = in_len - st.avail_in;
    s.produced = out_len - st.avail_out;
    if (rc < 0) {
      s.status = Status::error;
      s.message = rc == ISAL_INVALID_BLOCK      ? "invalid block"
                  : rc == ISAL_INVALID_SYMBOL   ? "invalid symbol"
                  : rc == ISAL_INVALID_LOOKBACK ? "invalid distance too far back"
                                                : fmt::format("error {}", rc);
    } else if (st.block_state == ISAL_BLOCK_FINISH) {
      s.status = Status::end;
      s.unused = st.avail_in;  // ISA-L 2.32.1 gives back the bytes it read ahead
    }
    return s;
  }
#endif
  z_stream& z = state_->z;
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = static_cast<uInt>(in_len);
  z.next_out = out;
  z.avail_out = static_cast<uInt>(out_len);
  int rc = inflate(&z, Z_NO_FLUSH);
  s.consumed = in_len - z.avail_in;
  s.produced = out_len - z.avail_out;
  if (rc == Z_STREAM_END) {
    s.status = Status::end;
    s.unused = z.avail_in;
  } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
    s.status = Status::error;
    s.message = z.msg ? z.msg : fmt::format("error {}", rc);
  }
  return s;
}

}  // namespace wm
