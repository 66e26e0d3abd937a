#pragma once

// A checker for reads that may be stale by contract (ReadMode::kAnyReplica; docs/design/
// replication.md §5): such a read is not linearizable, but what it returns is bounded.
//   - NO PHANTOM: a value read was written by a write that succeeded or whose outcome is unknown
//     (never by a write that was refused).
//   - BOUNDED STALENESS: a read that began at c sees no state older than a write acknowledged
//     before c - bound. Formally: let S be the write that produced what the read returned (the
//     latest-ending candidate; for "absent", a delete or the initial state). The read is stale
//     beyond the bound if some acknowledged write W returned before c - bound and S returned
//     before W was called: then S precedes W in every linearization, and the read missed W.
// Unknown-outcome writes never return, so a value they wrote is never judged stale.
//
// Pure functions over the recorded history (linearizability.h); thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/sim/linearizability.h"

namespace shoal::sim {

struct BoundedRead {
  std::string key;
  int64_t call_us = 0;
  int64_t return_us = 0;
  std::optional<std::string> value;  // nullopt: the key was absent
};

// The first violation found (a sentence naming the read and the write), or nullopt. `history`
// holds every write of the keys (other ops are ignored); the initial state of a key is absent.
[[nodiscard]] std::optional<std::string> CheckBoundedReads(
    const std::map<std::string, std::vector<Operation>>& history,
    const std::vector<BoundedRead>& reads, int64_t bound_us);

}  // namespace shoal::sim
