#pragma once

// A multi-threaded workload over a ShardedCollection while the shard count changes, with an
// exact oracle: every writer thread owns its keys (so its own acknowledged results fix their
// state), a reader thread runs queries the whole time, and a rebalancer is killed at random
// points and resumed by a new one until each change completes. Ends with a full consistency
// check of the shards. Shared by the stress tests and `shoal clientside-demo`.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/clientside/shard_catalog.h"
#include "src/metadata/metadata_store.h"

namespace shoal::clientside::testing {

struct StressConfig {
  std::string collection = "stress";
  int writers = 4;
  int keys_per_writer = 100;
  int stable_documents = 200;  // loaded first, never touched, must always be queried
  std::vector<uint32_t> shard_counts{2, 3, 2};  // the first is the initial count
  int writer_ops_per_phase = 300;               // per writer, before each change and after the last
  bool kill_rebalancer = true;
  uint64_t seed = 1;
};

struct StressReport {
  uint64_t operations = 0;               // acknowledged client operations
  uint64_t lost_writes = 0;              // acknowledged documents missing (or stale) at the end
  uint64_t resurrected = 0;              // deleted (or never written) documents present at the end
  uint64_t wrong_results = 0;            // client results the oracle contradicts
  uint64_t query_anomalies = 0;          // duplicates, order violations, stable documents missed
  std::vector<double> change_seconds{};  // wall time of each shard-count change
  uint64_t queries = 0;                  // complete queries run during the workload
  uint64_t rebalancer_kills = 0;
  uint64_t moved = 0;                 // documents moved by the rebalancers
  std::vector<std::string> errors{};  // empty when consistent
};

// Whether two JSON texts hold the same value (backends may reformat JSON).
[[nodiscard]] bool SameJson(const std::string& a, const std::string& b);

// The catalog must hold max(shard_counts) shards, all empty.
[[nodiscard]] StressReport RunStress(const StressConfig& config, metadata::MetadataStore& store,
                                     std::shared_ptr<ShardCatalog> catalog);

}  // namespace shoal::clientside::testing
