#pragma once

// HotCollection: one user collection with its declared sharded fields and entity groups, as
// the public API sees it (docs/design/hotspot.md).
//
//   - The schema lives in the system collection kSchemaCollection (one document per user
//     collection, changed by CompareAndSet) and is re-read at most every kSchemaRefresh; a
//     failed re-read keeps the last schema read (writes do not fail for it), and a read that
//     began before a Declare of this handle (or before a later read) never replaces what that
//     one installed: the handle's own declaration is in force from its return. A handle that has
//     read none yet, and cannot read it (its bucket is unavailable), treats the collection as
//     plain when the hidden collection does not exist: Declare creates that first, so its
//     absence means nothing was ever declared, and one unavailable bucket does not take every
//     key of the collection with it. Otherwise the read or write fails, naming the schema.
//   - Roots, cells and sub-groups live in the hidden collection HiddenCollectionName(name).
//   - Get folds every declared field into the main document; Query folds each result before it
//     evaluates conditions on declared fields (paper 003 §2.1 lists such queries as
//     unsupported; folding first answers them exactly, at the cost of reading the shards of
//     every candidate document). A page may then hold fewer than `limit` documents.
//   - Writes that set a declared field directly are refused (kInvalidArgument): use Apply.
//   - Auto fields (paper 003 §6): an Apply that sees more conflicts per second on a key than
//     grow_conflicts_per_s doubles its cells; Maintain halves them when the key is quiet (few
//     conflicts here, fewer than shrink_updates_per_s updates per cell, no growth for
//     kAutoCooldown). Maintain considers the keys this handle wrote in the last kMaintainFor,
//     and, once at start and then every kAdoptEvery, every key whose auto field has more cells
//     than its minimum (a scan of the roots), so a key grown by another process or before a
//     restart shrinks once quiet too. Maintain also folds the cells of dynamic fields this
//     handle wrote.
//
// Thread-safety: thread-safe; calls must come from runtime tasks (any thread on ThreadRuntime).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "src/client/client.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/hotspot/entity_group.h"
#include "src/hotspot/field_spec.h"
#include "src/hotspot/sharded_field.h"
#include "src/storage/predicate.h"

namespace shoal::hotspot {

inline constexpr std::string_view kSchemaCollection = "_shoal.schema";
inline constexpr std::string_view kSystemPrefix = "_shoal.";
inline constexpr transport::Micros kSchemaRefresh = 1'000'000;
inline constexpr transport::Micros kAutoWindow = 1'000'000;
inline constexpr transport::Micros kAutoCooldown = 5'000'000;
// A key leaves the maintenance list this long after this handle last wrote it.
inline constexpr transport::Micros kMaintainFor = 60'000'000;
// How often Maintain looks for auto fields above their minimum that no handle of this process
// writes (grown by another process, or before a restart), so that they shrink too.
inline constexpr transport::Micros kAdoptEvery = 60'000'000;

[[nodiscard]] StatusOr<std::string> HiddenCollectionName(std::string_view collection);

// Reads and changes the declared schema of collections; `schemas` is kSchemaCollection's id.
[[nodiscard]] StatusOr<CollectionSchema> LoadSchema(client::Client& client, CollectionId schemas,
                                                    std::string_view collection);
// Merges `declaration` into the stored schema (CompareAndSet loop); returns the new schema.
[[nodiscard]] StatusOr<CollectionSchema> DeclareSchema(client::Client& client, CollectionId schemas,
                                                       std::string_view collection,
                                                       const CollectionSchema& declaration);

struct MaintainStats {
  uint32_t grown = 0;
  uint32_t shrunk = 0;
  uint32_t compacted = 0;
  uint32_t adopted = 0;  // grown keys this handle had not written, put on its list
};

class HotCollection {
 public:
  // `clock` gives monotonic microseconds (the runtime's Now).
  HotCollection(client::Client& client, std::string name, CollectionId main,
                std::function<transport::Micros()> clock, uint64_t seed);

  [[nodiscard]] Status Declare(std::string_view schema_json);
  [[nodiscard]] StatusOr<CollectionSchema> Schema();

  // OK unless `json` sets a declared field.
  [[nodiscard]] Status CheckWrite(std::string_view json);
  // True when the cached schema declares no field, so that reads and writes of the collection
  // are plain single-key operations; never waits. Once the schema is older than kSchemaRefresh,
  // one caller at a time gets false (its synchronous path reads the schema again) and the others
  // true while it is younger than twice that.
  [[nodiscard]] bool KnownPlain();
  // `any_replica`: the stored document from any copy (client::Client::GetAnyReplica).
  [[nodiscard]] StatusOr<storage::Document> Get(std::string_view pk, ReadMode mode,
                                                bool any_replica = false);
  [[nodiscard]] StatusOr<client::QueryPage> Query(client::QueryOptions options);
  // Query's documents, folded and filtered the same way, through Client::QueryStream.
  [[nodiscard]] Status QueryStream(client::QueryOptions options,
                                   const std::function<Status(storage::Document)>& fn);
  // Resets the declared fields of a deleted document.
  [[nodiscard]] Status AfterDelete(std::string_view pk);

  [[nodiscard]] StatusOr<ApplyOutcome> Apply(std::string_view pk, std::string_view field,
                                             std::string_view operand_json,
                                             const ApplyOptions& options);
  [[nodiscard]] Status PutMember(std::string_view pk, std::string_view field,
                                 std::string_view member, std::string_view json);
  [[nodiscard]] Status RemoveMember(std::string_view pk, std::string_view field,
                                    std::string_view member);
  [[nodiscard]] StatusOr<std::pair<FieldKind, FieldLayout>> Describe(std::string_view pk,
                                                                     std::string_view field);
  [[nodiscard]] Status Reshard(std::string_view pk, std::string_view field, uint32_t shards);
  [[nodiscard]] Status Compact(std::string_view pk);
  // One pass of the background work (auto shrink, dynamic compaction).
  [[nodiscard]] StatusOr<MaintainStats> Maintain();

 private:
  struct KeyActivity {
    transport::Micros last_write = 0;
    transport::Micros window_start = 0;
    uint32_t window_conflicts = 0;
    transport::Micros last_grow = 0;
    bool resizing = false;
    bool dirty = false;  // dynamic: cells written since the last compaction
    // Auto: the last sample of the cells' update counters.
    uint64_t sampled_updates = 0;
    transport::Micros sampled_at = 0;
    std::vector<std::string> sampled_tokens;
    uint32_t conflicts_since_sample = 0;
  };

  [[nodiscard]] StatusOr<std::shared_ptr<const CollectionSchema>> CurrentSchema();
  [[nodiscard]] StatusOr<FieldSpec> SpecOf(std::string_view field);
  // Folds the declared fields into `body` (a JSON object).
  [[nodiscard]] Status FoldInto(const CollectionSchema& schema, std::string_view pk, ReadMode mode,
                                Value& body);
  // Moves the conditions on declared fields out of `options.filter` and returns them: they hold
  // only after folding, so the client checks them; the nodes check the rest.
  [[nodiscard]] static StatusOr<storage::DocumentFilter> SplitFilter(const CollectionSchema& schema,
                                                                     client::QueryOptions& options);
  // Folds the declared fields into `doc` and says whether it meets `local` (SplitFilter's part).
  [[nodiscard]] StatusOr<bool> FoldAndMatch(const CollectionSchema& schema,
                                            const storage::DocumentFilter& local,
                                            storage::FilterEvaluator& evaluator,
                                            storage::Document& doc);
  [[nodiscard]] Status EnsureHidden();
  // kSchemaCollection's id, resolved with the coordinator once (and created if missing, once
  // per cluster). With `create` false, nullopt where it does not exist and this client may not
  // create it (the read role): no collection has sharded fields then, so a read needs no
  // schema, and a user with the read role still reads.
  [[nodiscard]] StatusOr<std::optional<CollectionId>> SchemaCollection(bool create);
  void NoteWrite(const FieldSpec& spec, std::string_view pk, const ApplyOutcome& outcome);
  [[nodiscard]] StatusOr<bool> MaybeShrink(const FieldSpec& spec, const std::string& pk,
                                           transport::Micros now);
  // Puts on the maintenance list every key whose auto field has more active cells than its
  // minimum (a scan of the roots in the hidden collection); returns how many it added.
  [[nodiscard]] StatusOr<uint32_t> AdoptGrownKeys(const CollectionSchema& schema,
                                                  transport::Micros now);

  client::Client& client_;
  const std::string name_;
  const CollectionId main_;
  const std::function<transport::Micros()> clock_;
  const uint64_t seed_;

  std::mutex mu_;
  std::shared_ptr<const CollectionSchema> schema_;  // guarded by mu_
  transport::Micros schema_loaded_at_ = 0;          // guarded by mu_
  // Counts installs of schema_: a read of the stored schema installs its result only if none
  // happened since it began (a Declare or a later read knows better); guarded by mu_.
  uint64_t schema_installs_ = 0;
  bool refresh_claimed_ = false;         // a KnownPlain caller is reading the schema again; by mu_
  std::optional<CollectionId> schemas_;  // guarded by mu_
  std::unique_ptr<ShardedFields> fields_;  // set once with the hidden collection
  std::unique_ptr<EntityGroups> groups_;
  // (field, pk) -> activity; guarded by mu_.
  std::map<std::pair<std::string, std::string>, KeyActivity> activity_;
  std::optional<transport::Micros> adopted_at_;  // guarded by mu_; the last AdoptGrownKeys
};

}  // namespace shoal::hotspot
