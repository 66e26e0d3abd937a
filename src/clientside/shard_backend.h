#pragma once

// ShardBackend: one "dumb" shard of a client-side sharded collection (paper 000 §3, §5). The
// shard knows nothing of sharding: it offers exactly the atomic single-shard operations the
// paper assumes, on documents that carry two extra attributes, the map version and the
// tombstone flag (§6). Everything else (routing, versions, tombstones, merging) is done by the
// client library above it (sharded_collection.h). Design: docs/design/client-side-sharding.md.
//
// Results (paper 000 §5 notation, S = this shard, d = the document, q = a condition):
//   Insert      S ← S + {d}          kAlreadyExists (DUPLICATE) iff d_p ∈ S (tombstones count)
//   Delete      S ← S − {d}          kNotFound iff d_p ∉ S; removes the entry physically
//   DeleteIf    S ← S − S(d_p, q)    kNotFound iff d ∉ S(d_p, q) (Algorithm 5's removals)
//   Update      S(d_p) ← d           kNotFound iff d_p ∉ S (whole-document replacement)
//   UpdateIf    S(d_p, q) ← d        kNotFound iff d ∉ S(d_p, q)
//   Upsert      S ← S ∪ {d}          always writes
//   UpsertIf    S ← S ∪_q {d}        inserts if d_p ∉ S, replaces if d ∈ S(q), otherwise
//                                    kAlreadyExists (the insert branch finds d_p ∈ S)
//   Get         S(d_p)               kNotFound iff d_p ∉ S; tombstones are returned as stored
//   Query       S(filter), sorted by primary key, from a cursor (the last key returned); with
//               or_version = v also S(version = v) − S(filter) as shadow rows (below)
//
// Every operation is atomic with respect to every other operation on the same primary key, and
// the operations of one caller thread take effect in the order they were issued (§3). Any other
// error code (kUnavailable, kInternal, ...) is a failure of the shard itself.
//
// Thread-safety: implementations are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"
#include "src/common/strong_id.h"
#include "src/storage/predicate.h"

namespace shoal::clientside {

struct ShardIndexTag {
  static constexpr const char* kPrefix = "shard";
};
// The position of a shard in the collection's shard list: 0 .. n-1 (hash-mod-n routing).
using ShardIndex = StrongId<ShardIndexTag, uint32_t>;

struct MapVersionTag {
  static constexpr const char* kPrefix = "v";
};
// The metadata map version a document was written under (paper 000 §6 "version"): +1 every
// time the shard count changes, whether it grows or shrinks.
using MapVersion = StrongId<MapVersionTag, uint64_t>;

// A document as a shard stores it. `body` is a JSON object text (empty for a tombstone).
struct ShardDocument {
  std::string primary_key{};
  std::string body{};
  MapVersion version{};
  bool tombstone = false;

  friend bool operator==(const ShardDocument&, const ShardDocument&) = default;
  [[nodiscard]] std::string DebugString() const;
};

// A condition on the stored copy of one document; unset parts always hold.
struct ShardCondition {
  std::optional<bool> tombstone{};
  std::optional<MapVersion> version{};

  [[nodiscard]] static ShardCondition IsTombstone() { return {.tombstone = true, .version = {}}; }
  [[nodiscard]] static ShardCondition IsLive() { return {.tombstone = false, .version = {}}; }
  [[nodiscard]] static ShardCondition VersionIs(MapVersion v) {
    return {.tombstone = {}, .version = v};
  }
  [[nodiscard]] bool Holds(const ShardDocument& stored) const;
};

struct ShardQuery {
  // Applied to live documents; a non-empty filter never matches a tombstone.
  storage::DocumentFilter filter{};
  bool include_tombstones = false;      // only meaningful with an empty filter
  std::optional<MapVersion> version{};  // only documents of this version (Algorithm 5)
  std::string after_key{};              // resume after this primary key; "" = from the start
  bool has_after_key = false;           // distinguishes "" the key from "" the start
  // Also every document of this version, tombstones included, whether it matches or not: the
  // consistent query (Algorithm 6) needs the newest copy of each key to decide between copies.
  // Such a document that the rest of the query does not select comes back as a shadow row
  // (ShadowRow: its primary key and version, tombstone = true, no body): all the merge needs from
  // it is that the newest copy of the key is not in the result, so the shard does not ship its
  // body. Invariant: every live document a query returns is selected by the rest of the query.
  std::optional<MapVersion> or_version{};
  size_t limit = 1000;  // >= 1
};

struct ShardPage {
  std::vector<ShardDocument> documents{};  // ascending primary key
  bool done = false;                       // no document after the last one returned
};

// The shadow row of a document of version `version` (ShardQuery::or_version).
[[nodiscard]] ShardDocument ShadowRow(std::string primary_key, MapVersion version);

class ShardBackend {
 public:
  virtual ~ShardBackend() = default;

  // A name for logs ("memory:3", "postgres:shard_2").
  [[nodiscard]] virtual std::string Name() const = 0;
  // True when a call costs a round trip to a server, so that an operation gains by issuing its
  // independent calls on two shards at once (consistent_ops.cc); false when calls are local and
  // cheaper than a thread handoff.
  [[nodiscard]] virtual bool RemoteCalls() const { return false; }

  [[nodiscard]] virtual Status Insert(const ShardDocument& d) = 0;
  [[nodiscard]] virtual Status Delete(std::string_view primary_key) = 0;
  [[nodiscard]] virtual Status DeleteIf(std::string_view primary_key,
                                        const ShardCondition& condition) = 0;
  [[nodiscard]] virtual Status Update(const ShardDocument& d) = 0;
  [[nodiscard]] virtual Status UpdateIf(const ShardDocument& d,
                                        const ShardCondition& condition) = 0;
  [[nodiscard]] virtual Status Upsert(const ShardDocument& d) = 0;
  [[nodiscard]] virtual Status UpsertIf(const ShardDocument& d,
                                        const ShardCondition& condition) = 0;
  [[nodiscard]] virtual StatusOr<ShardDocument> Get(std::string_view primary_key) = 0;
  [[nodiscard]] virtual StatusOr<ShardPage> Query(const ShardQuery& query) = 0;
};

}  // namespace shoal::clientside
