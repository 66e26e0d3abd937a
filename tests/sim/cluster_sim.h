#pragma once

// One seeded run of the deterministic cluster simulation (ARCHITECTURE.md §4-§5): a coordinator
// and storage nodes on SimRuntime, clients doing per-key register operations with unique values,
// and chaos — bucket moves, splits, merges, node additions and removals, crashes and restarts of
// nodes and of the coordinator, at random moments and at named failpoints of the move protocol,
// with message delays, reordering and loss, and at K > 1 link partitions and drifting clocks.
// Checked continuously: at most one node may acknowledge a write to any sampled point; at the end:
// every key's history is linearizable (which covers lost acknowledged writes and resurrected
// deletes) and one full query returns each live key exactly once. The same seed replays the same
// run.

#include <cstdint>
#include <map>
#include <string>

namespace shoal::sim {

struct ClusterSimOptions {
  uint64_t seed = 1;
  std::string dir;  // scratch directory; the run uses dir/seed-N and removes it
  int clients = 3;
  int keys = 16;
  int64_t duration_us = 6'000'000;  // simulated time of chaos and load
  bool crashes = true;
  double loss = 0.01;
  double failpoint_crash_probability = 0.01;
  // Automatic split above / merge below these bucket sizes (bytes); 0 = off. RunClusterSim turns
  // them on for odd seeds unless set.
  uint64_t split_bytes = 0;
  uint64_t merge_bytes = 0;
  // A third of the clients' operations become Client::Batch calls of 2-5 writes to random keys
  // (insert, update, upsert, delete), each write one operation of the history.
  bool batch_writes = false;
  // K copies of every bucket (docs/design/replication.md). With K > 1 the chaos is crashes and
  // restarts of nodes and of the coordinator, nodes joining and leaving (copies rebuilt,
  // primaries handed over), operators' moves (a copy added where one is missing), and splits and
  // merges of replicated buckets (quiesced).
  uint32_t replication_factor = 1;
  // Every other get of the clients reads any copy (Client::GetAnyReplica, possibly stale); those
  // are checked by CheckBoundedReads (stale_reads.h) within the nodes' max_staleness.
  bool any_replica_reads = false;
  // K > 1 only, so that the K = 1 runs stay as they were:
  // - the chaos wheel also cuts a node (or the coordinator) from some of the others, sometimes
  //   in one direction only, and heals it within a couple of seconds (ChaosEvent::kPartition);
  bool partitions = true;
  // - every node and the coordinator run on a clock of their own, with a rate drawn in
  //   [1 - clock_drift, 1 + clock_drift] and an offset in [0, 1 s). The read lease is safe for
  //   clock_drift <= ε / L (docs/design/replication.md §4.2, §5: a lease of L - ε on the
  //   primary's clock ends within (L - ε) / (1 - d) of true time, a failover waits L + ε on the
  //   backups' and the coordinator's clocks, at least (L + ε) / (1 + d)); with ε = 100 ms and
  //   L = 1 s that is 10%, and 3% keeps the lease's end 140 ms before any promotion.
  double clock_drift = 0.03;
};

struct ClusterSimResult {
  bool ok = true;
  std::string failure;  // what went wrong, with the seed
  uint64_t operations = 0;
  uint64_t moves = 0;  // committed
  uint64_t aborted_moves = 0;
  uint64_t crashes = 0;
  uint64_t splits = 0;
  uint64_t partitions = 0;  // link partitions injected (ClusterSimOptions::partitions)
  uint64_t events = 0;
  uint64_t failovers = 0;                             // replicated buckets whose term changed
  uint64_t any_replica_reads = 0;                     // answered ones (any_replica_reads)
  std::map<std::string, uint64_t> failpoint_hits;     // named failpoints reached
  std::map<std::string, uint64_t> failpoint_crashes;  // ... and crashed at
};

[[nodiscard]] ClusterSimResult RunClusterSim(const ClusterSimOptions& options);

}  // namespace shoal::sim
