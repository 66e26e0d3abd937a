#pragma once

// One seeded run of the sharded-field simulation (src/hotspot, docs/design/hotspot.md): a
// coordinator and storage nodes on SimRuntime, one sum field of a few hot documents, and, all at
// once:
//   - updaters adding 1 with ShardedFields::Apply (each with its own client and layout cache),
//   - a resizer growing and shrinking the field between 1 and 8 cells (static and auto kinds),
//   - compactors, readers (kLatest and kSnapshot) and a root checker,
//   - chaos: bucket moves, node additions and removals, crashes of nodes, of the coordinator and
//     of the resizer / compactor / updater processes mid-operation, message delays and loss.
// Checked continuously: every root satisfies FieldRoot::CheckInvariants, and every read lies in
// [updates acknowledged before it began, updates begun before it ended and not certainly
// failed]. At the end, in a quiet cluster after a final Compact: the value is the acknowledged
// count plus at most the number of updates whose outcome is unknown, no cell is retiring, no
// active cell is sealed, and every cell document of the hidden collection is accounted for by
// its root (listed, pending or absorbed-but-not-yet-deleted). The same seed replays the same
// run.

#include <cstdint>
#include <optional>
#include <string>

#include "src/hotspot/field_spec.h"

namespace shoal::sim {

struct HotspotSimOptions {
  uint64_t seed = 1;
  std::string dir;  // scratch directory; the run uses dir/hot-seed-N and removes it
  // The kind of the field; unset: static, dynamic and auto in turn by seed.
  std::optional<hotspot::FieldKind> kind;
  int updaters = 4;
  int updates_per_updater = 40;
  int readers = 2;
  int compactors = 2;  // concurrent compactors (each crashable on its own)
  bool crashes = true;
  double loss = 0.01;
};

struct HotspotSimResult {
  bool ok = true;
  std::string failure;  // what went wrong, with the seed
  hotspot::FieldKind kind = hotspot::FieldKind::kStatic;
  uint64_t acked = 0;
  uint64_t unknown = 0;  // outcome unknown: may or may not have landed
  uint64_t failed = 0;   // certainly not applied
  uint64_t conflicts = 0;
  uint64_t reads = 0;           // successful kLatest reads checked against the bounds
  uint64_t snapshot_reads = 0;  // successful kSnapshot reads checked against the bounds
  uint64_t snapshot_aborted = 0;
  uint64_t read_failures = 0;
  uint64_t resizes = 0;  // successful
  uint64_t resize_failures = 0;
  uint64_t compactions = 0;  // successful
  uint64_t root_checks = 0;
  uint64_t crashes = 0;         // nodes and the coordinator
  uint64_t client_crashes = 0;  // updater, resizer and compactor processes
  uint64_t moves = 0;           // committed
  uint64_t leaked_cells = 0;    // neutral, never-published cells left by failed resizes
  uint64_t events = 0;
};

[[nodiscard]] HotspotSimResult RunHotspotSim(const HotspotSimOptions& options);

}  // namespace shoal::sim
