#pragma once

// ApplyCombiner: lets concurrent updates of one sharded field by the threads of one process
// share a write (flat combining, like a group commit; docs/design/hotspot.md, "Combining").
//
// A lane is one field of one document (with one fold and one retry policy). Up to `width`
// writes of a lane run at once (width = the field's active cells, so each can have a cell of
// its own); an update that finds the lane full waits in the lane's one open group, whose
// operand is the fold of its members' operands. When a running write ends, the open group
// takes its place and runs as ONE write of the combined operand; every member gets that
// write's result.
//
// Invariants:
//   - at most `width` writes of a lane run at once (a group counts once), except an update
//     whose operand cannot be merged into the open group: it runs alone at once;
//   - a member's update lands exactly when its group's write does: acknowledged only after it,
//     with the write's error otherwise (an ambiguous error is ambiguous for every member);
//   - the open group closes when it starts running, so no update joins a write in flight;
//     groups of a lane start in the order they opened, so none starves;
//   - merging needs the fold to be commutative and associative, which Fold registration checks.
//
// Thread-safety: thread-safe. A waiting caller blocks its thread on a condition variable,
// which the deterministic simulation forbids (Runtime rule 2): use it only on runtimes whose
// tasks are OS threads (ApplyOptions::combine).

#include <absl/container/flat_hash_map.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "src/common/status.h"
#include "src/hotspot/fold.h"

namespace shoal::hotspot {

struct CombinedWrite {
  uint32_t conflicts = 0;  // failed CompareAndSets before the write landed
};

struct CombinedResult {
  StatusOr<CombinedWrite> write = CombinedWrite{};
  uint32_t members = 1;  // updates that shared the write, this one included
  bool queued = false;   // this update waited for a running write of its lane (contention)
};

struct ApplyCombinerCounters {
  uint64_t writes = 0;       // writes run (alone or for a group)
  uint64_t combined = 0;     // updates that went out in a group's write
  uint64_t unmergeable = 0;  // updates that ran alone because their operand did not merge
};

class ApplyCombiner {
 public:
  using Merge = std::function<StatusOr<Value>(const Value&, const Value&)>;
  // Writes `operand` (the fold of `updates` updates) to the field.
  using Write = std::function<StatusOr<CombinedWrite>(const Value& operand, uint32_t updates)>;

  [[nodiscard]] CombinedResult Apply(const std::string& lane, uint32_t width, Value operand,
                                     const Merge& merge, const Write& write);

  [[nodiscard]] ApplyCombinerCounters counters() const;

 private:
  struct Group {
    explicit Group(Value v) : operand(std::move(v)) {}
    Value operand;
    uint32_t members = 1;
    bool may_run = false;  // it took a running write's place
    bool done = false;
    StatusOr<CombinedWrite> result = CombinedWrite{};
    std::condition_variable cv;
  };
  struct Lane {
    uint32_t running = 0;
    std::shared_ptr<Group> open;  // null while no update waits
  };

  // A running write of `lane` ended: the open group takes its place, or the lane has one
  // writer less. Requires mu_ held.
  void EndWrite(const std::string& lane);

  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Lane> lanes_;  // guarded by mu_; erased when idle
  ApplyCombinerCounters counters_;                // guarded by mu_
};

}  // namespace shoal::hotspot
