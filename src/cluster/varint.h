#pragma once

// LEB128 varints and a bounds-checked reader, shared by the durable encodings of the cluster
// model (shard_map_edit.cc, shard_map_codec.cc). Internal to src/cluster; not part of its API.
//
// Writers emit the minimal form; VarintReader accepts only the minimal form, so that every
// accepted encoding re-encodes to the same bytes. VarintReader never reads past its input and
// reports every failure as InvalidArgument prefixed with the name of the encoding.
//
// Free functions are thread-safe; a VarintReader is thread-compatible.

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::cluster::internal {

inline void PutVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

inline void PutByte(std::string* out, uint8_t value) { out->push_back(static_cast<char>(value)); }

class VarintReader {
 public:
  // `encoding` names the format in error messages ("shard map edit").
  VarintReader(std::string_view bytes, std::string_view encoding)
      : bytes_(bytes), encoding_(encoding) {}

  [[nodiscard]] size_t remaining() const { return bytes_.size() - pos_; }

  // InvalidArgument with `message` prefixed by the encoding's name.
  [[nodiscard]] Status Error(std::string_view message) const {
    return InvalidArgumentError(fmt::format("{}: {}", encoding_, message));
  }

  [[nodiscard]] Status Byte(std::string_view what, uint8_t* value) {
    if (pos_ >= bytes_.size()) return Truncated(what);
    *value = static_cast<uint8_t>(bytes_[pos_++]);
    return OkStatus();
  }

  // A minimal LEB128 varint of at most 64 bits.
  [[nodiscard]] Status Varint64(std::string_view what, uint64_t* value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return Truncated(what);
      const auto byte = static_cast<uint8_t>(bytes_[pos_++]);
      // The tenth byte holds only bit 63.
      if (shift == 63 && byte > 1) return Error(fmt::format("{} overflows 64 bits", what));
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        if (byte == 0 && shift > 0) return Error(fmt::format("{} is not minimal", what));
        *value = result;
        return OkStatus();
      }
    }
    return Error(fmt::format("{} overflows 64 bits", what));
  }

  [[nodiscard]] Status Varint32(std::string_view what, uint32_t* value) {
    uint64_t wide = 0;
    SHOAL_RETURN_IF_ERROR(Varint64(what, &wide));
    if (wide > std::numeric_limits<uint32_t>::max()) {
      return Error(fmt::format("{} overflows 32 bits", what));
    }
    *value = static_cast<uint32_t>(wide);
    return OkStatus();
  }

  // A StrongId (ids.h) of 32 or 64 bits.
  template <typename Id>
  [[nodiscard]] Status Read(std::string_view what, Id* id) {
    typename Id::ValueType raw{};
    static_assert(sizeof(raw) == 4 || sizeof(raw) == 8);
    if constexpr (sizeof(raw) == 8) {
      SHOAL_RETURN_IF_ERROR(Varint64(what, &raw));
    } else {
      SHOAL_RETURN_IF_ERROR(Varint32(what, &raw));
    }
    *id = Id(raw);
    return OkStatus();
  }

 private:
  [[nodiscard]] Status Truncated(std::string_view what) const {
    return Error(fmt::format("truncated at byte {} reading {}", pos_, what));
  }

  std::string_view bytes_;
  std::string_view encoding_;
  size_t pos_ = 0;
};

}  // namespace shoal::cluster::internal
