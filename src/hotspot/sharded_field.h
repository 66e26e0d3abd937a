#pragma once

// ShardedFields: the protocol of sharded fields over Shoal's smart client (paper 003 §2.1,
// §2.2, §4; docs/design/hotspot.md). The pure state of one field of one document is FieldRoot
// (field_root.h, with the invariants R1-R4 and rules P1-P3); this class does the I/O.
//
//   Apply    static/auto: pick an active cell (the one with the fewest updates of this client
//            in flight), read it, fold the lifted operand in, CompareAndSet; a conflict
//            retries (or fails with kAborted when retries are off). A sealed or missing cell
//            refreshes the layout (P3). With combine, updates of one field beyond one per
//            active cell wait and go out as one write (apply_combiner.h). dynamic: insert a
//            new cell with a fresh token; no read, no conflict.
//   Read     root, then every cell it lists (dynamic: the cells found by a query on the owner),
//            then the root again if any cell was sealed or gone: value = base ⊕ unabsorbed cells.
//            It contains every update acknowledged before the read began and none that began
//            after it ended; concurrent updates may or may not be in it (per-cell reads, no
//            global snapshot). kSnapshot repeats the collection until two consecutive ones see
//            the same versions everywhere (a double collect): the value held at one instant.
//   Resize   grow: create cells (P1) in buckets no other cell of the field uses when the map
//            allows, then publish them. shrink: retire, seal (P2), absorb, delete, record.
//   Compact  finishes whatever a crashed resize or compaction left, and folds dynamic cells.
//
// Every step is idempotent and safe with any number of concurrent updaters, readers and
// compactors in any processes, and with bucket moves (the client follows them).
//
// Thread-safety: thread-safe; calls must come from runtime tasks (any thread on ThreadRuntime).

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "src/client/client.h"
#include "src/common/ids.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/hotspot/apply_combiner.h"
#include "src/hotspot/cell_state.h"
#include "src/hotspot/field_root.h"
#include "src/hotspot/field_spec.h"

namespace shoal::hotspot {

struct ApplyOptions {
  bool retry_on_conflict = true;
  uint32_t max_attempts = 256;  // conflicts before kAborted even with retries
  // static/auto: concurrent updates of one field by this object's callers share writes
  // (apply_combiner.h). Blocks a waiting caller's thread: only on OS-thread runtimes.
  bool combine = false;
};

struct ApplyOutcome {
  uint32_t conflicts = 0;  // failed CompareAndSets before the update landed
  uint32_t members = 1;    // updates that shared the write that carried this one
  bool queued = false;     // it waited behind other updates of the field (combine)
};

enum class ReadMode : uint8_t {
  kLatest,    // per-cell reads; see the class comment
  kSnapshot,  // a double collect: the value at one instant, or kAborted after many tries
};

struct FieldLayout {
  uint32_t active_cells = 0;
  uint32_t retiring_cells = 0;
  uint32_t pending_cells = 0;  // dynamic: cells not folded yet
  uint32_t distinct_buckets = 0;
  uint32_t distinct_nodes = 0;
  uint64_t root_seq = 0;
};

// Keys in the hidden collection; primary keys are opaque bytes, so parts are joined by '\0'.
[[nodiscard]] std::string RootKey(std::string_view pk, std::string_view field);
[[nodiscard]] std::string CellKey(std::string_view pk, std::string_view field,
                                  std::string_view token);
// The owner of dynamic cells, a hex string so that a query can filter on it.
[[nodiscard]] std::string OwnerOf(std::string_view pk, std::string_view field);

// Sets layout.distinct_buckets/nodes: where `keys` of `collection` live under the client's map.
void CountPlacement(client::Client& client, CollectionId collection,
                    const std::vector<std::string>& keys, FieldLayout& layout);

class ShardedFields {
 public:
  // `cells` is the hidden collection that holds roots and cells of one user collection.
  ShardedFields(client::Client& client, CollectionId cells, uint64_t seed);

  [[nodiscard]] StatusOr<ApplyOutcome> Apply(const FieldSpec& spec, std::string_view pk,
                                             const Value& operand, const ApplyOptions& options);
  [[nodiscard]] StatusOr<Value> Read(const FieldSpec& spec, std::string_view pk, ReadMode mode);
  // Sets the number of active cells of a static/auto field (1..kMaxShards).
  [[nodiscard]] Status Resize(const FieldSpec& spec, std::string_view pk, uint32_t cells);
  [[nodiscard]] Status Compact(const FieldSpec& spec, std::string_view pk);
  // Drops the field's state (the document was deleted): the value reads as neutral again.
  [[nodiscard]] Status Reset(const FieldSpec& spec, std::string_view pk);
  [[nodiscard]] StatusOr<FieldLayout> Describe(const FieldSpec& spec, std::string_view pk);
  // Sum of the update counters of the active cells and their number (the auto policy's input).
  struct UpdateCount {
    uint64_t updates = 0;
    std::vector<std::string> tokens;
  };
  // Active cells of a static/auto field as this client last saw them (creates the first ones).
  [[nodiscard]] StatusOr<uint32_t> CellCount(const FieldSpec& spec, std::string_view pk);
  [[nodiscard]] StatusOr<UpdateCount> CountUpdates(const FieldSpec& spec, std::string_view pk);

  [[nodiscard]] client::Client& client() { return client_; }
  [[nodiscard]] CollectionId collection() const { return cells_; }

 private:
  // Shared, immutable: an Apply copies a pointer, not the tokens.
  using Tokens = std::shared_ptr<const std::vector<std::string>>;
  struct CellRead {
    std::string token;
    bool found = false;
    CellState state;
    uint64_t version = 0;
  };

  // Folds `lifted`, the fold of `updates` updates, into one active cell.
  [[nodiscard]] StatusOr<ApplyOutcome> ApplyInPlace(const FieldSpec& spec, std::string_view pk,
                                                    const Value& lifted,
                                                    const ApplyOptions& options, uint32_t updates);
  [[nodiscard]] StatusOr<ApplyOutcome> ApplyCombined(const FieldSpec& spec, std::string_view pk,
                                                     Value lifted, const ApplyOptions& options);
  [[nodiscard]] StatusOr<ApplyOutcome> ApplyDynamic(const FieldSpec& spec, std::string_view pk,
                                                    const Value& lifted);
  // The root and its version; a missing root is Empty(neutral) at version 0.
  [[nodiscard]] StatusOr<std::pair<FieldRoot, uint64_t>> LoadRoot(const FieldSpec& spec,
                                                                  std::string_view pk);
  // Writes `root` over version `expected` (0 = insert). kFailedPrecondition/kAlreadyExists on
  // a race.
  [[nodiscard]] Status StoreRoot(std::string_view pk, std::string_view field, const FieldRoot& root,
                                 uint64_t expected);
  // Active cells from the cache, else from the root (creating the first cells when missing).
  [[nodiscard]] StatusOr<Tokens> ActiveCells(const FieldSpec& spec, std::string_view pk,
                                             bool refresh);
  [[nodiscard]] StatusOr<std::vector<CellRead>> ReadCells(std::string_view pk,
                                                          std::string_view field,
                                                          const std::vector<std::string>& tokens);
  [[nodiscard]] StatusOr<std::vector<CellRead>> QueryDynamicCells(std::string_view pk,
                                                                  std::string_view field);
  [[nodiscard]] StatusOr<std::vector<std::string>> DynamicTokens(std::string_view pk,
                                                                 std::string_view field);
  [[nodiscard]] StatusOr<Value> ReadOnce(const FieldSpec& spec, std::string_view pk, bool* retry);
  [[nodiscard]] StatusOr<Value> ReadSnapshot(const FieldSpec& spec, std::string_view pk);
  // Creates `count` new neutral cells, spread over buckets (P1); returns their tokens.
  [[nodiscard]] StatusOr<std::vector<std::string>> CreateCells(
      const FieldSpec& spec, std::string_view pk, const std::vector<std::string>& existing,
      uint32_t count);
  // Seals one cell and returns its final value (missing: nullopt).
  [[nodiscard]] StatusOr<std::optional<Value>> Seal(std::string_view pk, std::string_view field,
                                                    std::string_view token);
  // Seals, absorbs, deletes and records `tokens` (retiring or dynamic cells).
  [[nodiscard]] Status Retire(const FieldSpec& spec, std::string_view pk,
                              const std::vector<std::string>& tokens);
  [[nodiscard]] std::string NewToken();
  void Forget(std::string_view pk, std::string_view field);
  // Picks the cell of one update attempt, the least busy active cell (busy: the updates of this
  // object in flight on it; ties go to the first from a random start), and counts the attempt
  // on it until EndUpdate.
  [[nodiscard]] std::string BeginUpdate(std::string_view pk, std::string_view field,
                                        const std::vector<std::string>& active);
  void EndUpdate(const std::string& cell_key);

  client::Client& client_;
  const CollectionId cells_;
  std::mutex mu_;
  Random random_;                                       // guarded by mu_
  std::map<std::string, Tokens, std::less<>> layouts_;  // guarded by mu_
  // Update attempts in flight per cell key (entries at 0 are erased); guarded by mu_.
  absl::flat_hash_map<std::string, uint32_t> in_flight_;
  ApplyCombiner combiner_;
};

}  // namespace shoal::hotspot
