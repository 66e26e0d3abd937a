#include "src/storage/codec.h"

#include <fmt/format.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

Status Corrupt(std::string_view what) { return StorageError(ErrorReason::kCorruption, what); }

}  // namespace

void AppendBigEndian64(uint64_t value, std::string* out) {
  char buf[8];
  EncodeBigEndian64(value, buf);
  out->append(buf, sizeof(buf));
}

void AppendBigEndian32(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(value >> (24 - 8 * i)));
}

uint32_t DecodeBigEndian32(const char in[4]) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

void AppendVarint64(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

bool ConsumeVarint64(std::string_view* in, uint64_t* value) {
  uint64_t result = 0;
  for (size_t i = 0; i < in->size() && i < 10; ++i) {
    const auto byte = static_cast<unsigned char>((*in)[i]);
    if (i == 9 && byte > 1) return false;  // more than 64 bits
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *value = result;
      return true;
    }
  }
  return false;
}

std::string EncodeStoredKey(Point point, CollectionId collection, std::string_view primary_key) {
  std::string key;
  key.reserve(kStoredKeyPrefixBytes + primary_key.size());
  AppendBigEndian64(point.value(), &key);
  AppendBigEndian32(collection.value(), &key);
  key.append(primary_key);
  return key;
}

std::string EncodeStoredKey(CollectionId collection, std::string_view primary_key) {
  return EncodeStoredKey(PointOf(collection, primary_key), collection, primary_key);
}

StatusOr<StoredKeyView> DecodeStoredKey(std::string_view key) {
  if (key.size() <= kStoredKeyPrefixBytes) {
    return Corrupt(fmt::format("stored key of {} bytes is too short", key.size()));
  }
  StoredKeyView view;
  view.point = Point(DecodeBigEndian64(key.data()));
  view.collection = CollectionId(DecodeBigEndian32(key.data() + 8));
  if (!IsValidCollectionId(view.collection)) {
    return Corrupt(
        fmt::format("stored key has reserved collection id {}", view.collection.value()));
  }
  view.primary_key = key.substr(kStoredKeyPrefixBytes);
  return view;
}

std::array<char, kStoredValueHeaderBytes> EncodeStoredValueHeader(uint64_t version,
                                                                  bool tombstone) {
  std::array<char, kStoredValueHeaderBytes> header{};
  header[0] = static_cast<char>(kValueFormatV1);
  header[1] = static_cast<char>(tombstone ? kTombstoneFlag : 0);
  for (int i = 0; i < 8; ++i) {
    header[2 + i] = static_cast<char>(static_cast<uint8_t>(version >> (56 - 8 * i)));
  }
  return header;
}

std::string EncodeStoredValue(uint64_t version, bool tombstone, std::string_view body) {
  const std::array<char, kStoredValueHeaderBytes> header =
      EncodeStoredValueHeader(version, tombstone);
  std::string value;
  value.reserve(kStoredValueHeaderBytes + body.size());
  value.append(header.data(), header.size());
  if (!tombstone) value.append(body);
  return value;
}

StatusOr<StoredValueView> DecodeStoredValue(std::string_view value) {
  if (value.size() < kStoredValueHeaderBytes) {
    return Corrupt(fmt::format("stored value of {} bytes is too short", value.size()));
  }
  if (static_cast<uint8_t>(value[0]) != kValueFormatV1) {
    return Corrupt(fmt::format("unknown value format {}", static_cast<uint8_t>(value[0])));
  }
  const auto flags = static_cast<uint8_t>(value[1]);
  if ((flags & ~kTombstoneFlag) != 0) return Corrupt(fmt::format("unknown flags {:#x}", flags));
  StoredValueView view;
  view.tombstone = (flags & kTombstoneFlag) != 0;
  view.version = DecodeBigEndian64(value.data() + 2);
  view.body = value.substr(kStoredValueHeaderBytes);
  if (view.tombstone && !view.body.empty()) return Corrupt("tombstone with a body");
  return view;
}

StatusOr<Document> DocumentFromStored(std::string_view key, std::string_view value) {
  SHOAL_ASSIGN_OR_RETURN(StoredKeyView k, DecodeStoredKey(key));
  SHOAL_ASSIGN_OR_RETURN(StoredValueView v, DecodeStoredValue(value));
  return Document{.collection = k.collection,
                  .primary_key = std::string(k.primary_key),
                  .body = std::string(v.body),
                  .version = v.version,
                  .tombstone = v.tombstone};
}

std::string EncodeDocument(const Document& document) {
  const std::string key = EncodeStoredKey(document.collection, document.primary_key);
  std::string out;
  out.reserve(1 + 2 + key.size() + kStoredValueHeaderBytes + document.body.size());
  out.push_back(static_cast<char>(kDocumentFormatV1));
  AppendVarint64(key.size(), &out);
  out.append(key);
  out.append(EncodeStoredValue(document.version, document.tombstone, document.body));
  return out;
}

StatusOr<Document> DecodeDocument(std::string_view bytes) {
  if (bytes.empty()) return Corrupt("empty document encoding");
  if (static_cast<uint8_t>(bytes[0]) != kDocumentFormatV1) {
    return Corrupt(fmt::format("unknown document format {}", static_cast<uint8_t>(bytes[0])));
  }
  bytes.remove_prefix(1);
  uint64_t key_size = 0;
  if (!ConsumeVarint64(&bytes, &key_size) || key_size > bytes.size()) {
    return Corrupt("bad stored key length");
  }
  const std::string_view key = bytes.substr(0, key_size);
  SHOAL_ASSIGN_OR_RETURN(StoredKeyView k, DecodeStoredKey(key));
  if (PointOf(k.collection, k.primary_key) != k.point) {
    return Corrupt("stored key's point does not match its collection and primary key");
  }
  return DocumentFromStored(key, bytes.substr(key_size));
}

}  // namespace shoal::storage
