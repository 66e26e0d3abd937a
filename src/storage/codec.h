#pragma once

// The stable binary encodings of the storage layer. Every format starts with a format-version
// byte (or, for keys, is fixed by the column family's format marker), so a reader can refuse
// bytes it does not understand instead of misreading them.
//
// Stored key (documents column family), point first so a bucket is one key range:
//   [point, 8 bytes big-endian][collection id, 4 bytes big-endian][primary key bytes]
// Stored value:
//   [format = 1][flags: bit 0 tombstone, other bits 0][version, 8 bytes big-endian][body bytes]
// A tombstone has an empty body. Whole document (change records, fuzzing, tools):
//   [format = 1][stored key length, LEB128 varint][stored key][stored value]
//
// Collection ids 0 and 2^32-1 are reserved, so kMaxStoredKeyBound is above every stored key.
// All functions are pure and thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/common/ids.h"
#include "src/common/point.h"
#include "src/common/status.h"
#include "src/storage/document.h"

namespace shoal::storage {

inline constexpr uint8_t kValueFormatV1 = 1;
inline constexpr uint8_t kDocumentFormatV1 = 1;
inline constexpr uint8_t kTombstoneFlag = 0x01;
inline constexpr size_t kStoredKeyPrefixBytes = 12;
inline constexpr size_t kStoredValueHeaderBytes = 10;
inline constexpr uint32_t kMinCollectionId = 1;
inline constexpr uint32_t kMaxCollectionId = 0xFFFFFFFEu;
inline constexpr std::string_view kMaxStoredKeyBound(
    "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", kStoredKeyPrefixBytes);

[[nodiscard]] inline bool IsValidCollectionId(CollectionId id) {
  return id.value() >= kMinCollectionId && id.value() <= kMaxCollectionId;
}

struct StoredKeyView {
  Point point{};
  CollectionId collection{};
  std::string_view primary_key{};
};

struct StoredValueView {
  uint64_t version = 0;
  bool tombstone = false;
  std::string_view body{};
};

[[nodiscard]] std::string EncodeStoredKey(Point point, CollectionId collection,
                                          std::string_view primary_key);
// With point = PointOf(collection, primary_key).
[[nodiscard]] std::string EncodeStoredKey(CollectionId collection, std::string_view primary_key);
// Corruption if shorter than the prefix, the collection id is reserved or the key is empty.
// The point is not recomputed (see DecodeDocument for the checked form).
[[nodiscard]] StatusOr<StoredKeyView> DecodeStoredKey(std::string_view key);

[[nodiscard]] std::string EncodeStoredValue(uint64_t version, bool tombstone,
                                            std::string_view body);
// The first kStoredValueHeaderBytes of EncodeStoredValue (the body follows), for writers that
// hand the engine the header and the body as two parts instead of one copied string.
[[nodiscard]] std::array<char, kStoredValueHeaderBytes> EncodeStoredValueHeader(uint64_t version,
                                                                                bool tombstone);
// Corruption on an unknown format byte, unknown flags, or a tombstone with a body.
[[nodiscard]] StatusOr<StoredValueView> DecodeStoredValue(std::string_view value);

// A Document from one stored key/value pair.
[[nodiscard]] StatusOr<Document> DocumentFromStored(std::string_view key, std::string_view value);

[[nodiscard]] std::string EncodeDocument(const Document& document);
// The inverse of EncodeDocument; also checks that the key's point is PointOf(collection, pk) and
// that nothing trails the value. Bodies are not JSON-validated here (they were on intake).
[[nodiscard]] StatusOr<Document> DecodeDocument(std::string_view bytes);

// LEB128 varints, exposed for the other encodings of the layer.
void AppendVarint64(uint64_t value, std::string* out);
// Reads a varint from the front of `*in` and advances it; false on truncation or overflow.
[[nodiscard]] bool ConsumeVarint64(std::string_view* in, uint64_t* value);

void AppendBigEndian64(uint64_t value, std::string* out);
void AppendBigEndian32(uint32_t value, std::string* out);
[[nodiscard]] uint32_t DecodeBigEndian32(const char in[4]);

}  // namespace shoal::storage
