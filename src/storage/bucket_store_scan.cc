// BucketStore: scans with predicates, snapshots and resumable cursors (bucket_store.h).

#include <fmt/format.h>

#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

constexpr uint8_t kCursorFormatV1 = 1;

std::string EncodeCursor(std::string_view last_key) {
  std::string cursor(1, static_cast<char>(kCursorFormatV1));
  cursor.append(last_key);
  return cursor;
}

// The stored key a cursor resumes after; it must lie inside `range`.
StatusOr<std::string> DecodeCursor(std::string_view cursor, const PointRange& range) {
  if (cursor.size() <= 1 + kStoredKeyPrefixBytes ||
      static_cast<uint8_t>(cursor[0]) != kCursorFormatV1) {
    return StorageError(ErrorReason::kInvalidArgument, "malformed scan cursor");
  }
  std::string key(cursor.substr(1));
  if (key < range.BeginKey() || key >= range.EndKey()) {
    return StorageError(ErrorReason::kInvalidArgument, "scan cursor outside the scanned range");
  }
  return key;
}

// Scans `options.range` in key order. For each stored entry calls `visit(key, value, document)`
// where `document` is set only for a match; stops when visit returns false.
template <typename Visit>
Status Walk(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, rocksdb::ReadOptions ro,
            const ScanOptions& options, const std::string& resume_after, Visit visit) {
  const std::string begin = options.range.BeginKey();
  const std::string end = options.range.EndKey();
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, cf));
  if (resume_after.empty()) {
    it->Seek(begin);
  } else {
    it->Seek(resume_after);
    if (it->Valid() && it->key() == rocksdb::Slice(resume_after)) it->Next();
  }
  FilterEvaluator evaluator(options.filter);
  for (; it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    const std::string_view value(it->value().data(), it->value().size());
    std::optional<Document> match;
    SHOAL_ASSIGN_OR_RETURN(StoredKeyView k, DecodeStoredKey(key));
    if (!options.collection.has_value() || *options.collection == k.collection) {
      SHOAL_ASSIGN_OR_RETURN(StoredValueView v, DecodeStoredValue(value));
      bool matches = !v.tombstone || options.include_tombstones;
      if (matches && !options.filter.empty()) {
        if (v.tombstone) {
          matches = false;
        } else {
          SHOAL_ASSIGN_OR_RETURN(matches, evaluator.Matches(v.body));
        }
      }
      if (matches) {
        match = Document{.collection = k.collection,
                         .primary_key = std::string(k.primary_key),
                         .body = std::string(v.body),
                         .version = v.version,
                         .tombstone = v.tombstone};
      }
    }
    if (!visit(key, match)) {
      it->Next();
      // Tell the caller whether anything follows, through one more call with no key.
      std::optional<Document> none;
      if (it->Valid()) visit(std::string_view(), none);
      return FromRocks(it->status(), "scan");
    }
  }
  return FromRocks(it->status(), "scan");
}

Status ValidateScan(const ScanOptions& options) {
  if (options.max_documents == 0 || options.max_examined == 0) {
    return StorageError(ErrorReason::kInvalidArgument, "scan page limits must be >= 1");
  }
  if (options.collection.has_value() && !IsValidCollectionId(*options.collection)) {
    return StorageError(ErrorReason::kInvalidArgument, "reserved collection id");
  }
  return ValidateFilter(options.filter);
}

}  // namespace

StatusOr<ScanPage> BucketStore::Scan(const ScanOptions& options) const {
  SHOAL_RETURN_IF_ERROR(ValidateScan(options));
  if (options.collection.has_value()) SHOAL_RETURN_IF_ERROR(CheckCollection(*options.collection));
  std::string resume_after;
  if (!options.cursor.empty()) {
    SHOAL_ASSIGN_OR_RETURN(resume_after, DecodeCursor(options.cursor, options.range));
  }
  ScanPage page;
  if (options.range.empty()) return page;
  size_t bytes = 0;
  std::string last_key;
  bool more = false;
  SHOAL_RETURN_IF_ERROR(
      Walk(db_, documents_, MakeReadOptions(options.snapshot), options, resume_after,
           [&](std::string_view key, std::optional<Document>& match) {
             if (key.empty()) {  // the entry after the page's last one exists
               more = true;
               return false;
             }
             ++page.examined;
             if (match.has_value()) {
               const size_t size = match->primary_key.size() + match->body.size();
               if (options.max_page_bytes != 0 && !page.documents.empty() &&
                   bytes + size > options.max_page_bytes) {
                 more = true;  // this match opens the next page: the cursor stays before it
                 return false;
               }
               bytes += size;
               page.documents.push_back(std::move(*match));
             }
             last_key.assign(key);
             return page.documents.size() < options.max_documents && bytes < options.max_bytes &&
                    page.examined < options.max_examined;
           }));
  if (more) page.next_cursor = EncodeCursor(last_key);
  return page;
}

Status BucketStore::ForEach(const ScanOptions& options,
                            const std::function<bool(const Document&)>& fn) const {
  SHOAL_RETURN_IF_ERROR(ValidateScan(options));
  if (options.collection.has_value()) SHOAL_RETURN_IF_ERROR(CheckCollection(*options.collection));
  if (options.range.empty()) return OkStatus();
  bool stopped = false;
  return Walk(db_, documents_, MakeReadOptions(options.snapshot), options, std::string(),
              [&](std::string_view key, std::optional<Document>& match) {
                if (key.empty() || stopped) return false;
                if (match.has_value() && !fn(*match)) stopped = true;
                return !stopped;
              });
}

}  // namespace shoal::storage
