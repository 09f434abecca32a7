// Protobuf's wire format, written by hand: varints, tags, fixed64 and length-delimited fields. Shared by the
// Perfetto encoders: the per-record slice loops (format/perfetto_slices.cpp) and the
// rare packets of a trace (format/perfetto_track_packets.cpp). No torch, no protobuf library.
//
// Two ways to write:
// * `Cursor`: a raw pointer into a buffer the caller sized for the worst case, no capacity checks, every
//   nested message shorter than 128 bytes (one length byte, written on close). For the hot loops.
// * the `append_*` functions on a std::string: any size, lengths computed as they come. For packets
//   written a few times per file.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace trt_trace {
namespace wire {

constexpr uint32_t kVarint = 0, kFixed64 = 1, kBytes = 2;

// Everything on the cursor is inlined into the caller's loop so that the cursor stays in a register: a
// cursor kept in memory has to be reloaded after every byte store (a uint8_t store may alias it).
#define TRT_TRACE_WIRE_INLINE __attribute__((always_inline)) inline

struct Cursor {
  uint8_t* p;
  TRT_TRACE_WIRE_INLINE void varint(uint64_t v) {
    if (v < 0x80) {  // tags, ids, small values: most varints
      *p++ = static_cast<uint8_t>(v);
      return;
    }
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
  }
  TRT_TRACE_WIRE_INLINE void tag(uint32_t field, uint32_t wire) { varint((field << 3) | wire); }
  TRT_TRACE_WIRE_INLINE void field(uint32_t field, uint64_t v) {
    tag(field, kVarint);
    varint(v);
  }
  TRT_TRACE_WIRE_INLINE void fixed64(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    std::memcpy(p, &v, 8);  // little-endian on every platform torch builds for
    p += 8;
  }
  // A length-delimited field whose content follows; close() writes its length. The content must be
  // shorter than 128 bytes, so that the length is one varint byte and no size is computed first.
  TRT_TRACE_WIRE_INLINE uint8_t* open(uint32_t field) {
    tag(field, kBytes);
    return p++;
  }
  TRT_TRACE_WIRE_INLINE void close(uint8_t* length_at) { *length_at = static_cast<uint8_t>(p - length_at - 1); }
};

inline void append_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void append_tag(std::string& out, uint32_t field, uint32_t wire) { append_varint(out, (field << 3) | wire); }

// A varint field: uint32/uint64/bool/enum values, and int32/int64 ones as their two's complement
// (a negative value takes ten bytes, as protobuf writes it for both widths).
inline void append_varint_field(std::string& out, uint32_t field, uint64_t v) {
  append_tag(out, field, kVarint);
  append_varint(out, v);
}

inline void append_fixed64_field(std::string& out, uint32_t field, uint64_t bits) {
  append_tag(out, field, kFixed64);
  char le[8];
  std::memcpy(le, &bits, 8);  // little-endian on every platform torch builds for
  out.append(le, 8);
}

inline void append_double_field(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);  // the bits as they are: -0.0 and NaN payloads too, as protobuf keeps them
  append_fixed64_field(out, field, bits);
}

// A length-delimited field (string, bytes, or an already encoded message).
inline void append_bytes_field(std::string& out, uint32_t field, std::string_view bytes) {
  append_tag(out, field, kBytes);
  append_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

}  // namespace wire
}  // namespace trt_trace
