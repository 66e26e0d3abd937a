#pragma once

// `shoal demo`: the main job of `make demo`. An embedded cluster (3 storage nodes, 32 buckets,
// K = 3 copies of each, a coordinator with its balancer) on one ThreadRuntime takes a mixed
// workload from several client threads while a fourth node joins, the first one leaves, and then
// (K > 1) a second one is killed without a removal and restarted: its primaries fail over to
// their backups and its copies are rebuilt. Every acknowledged write is checked at the end
// against a model of the expected state, and a full query must return every live document
// exactly once. The summary reports the bytes moved against the optimum, the time until the new
// node serves, the failover and re-replication times, the throughput before, during and after
// the changes, and the fence pauses.

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddDemoCommand(CLI::App& app);

}  // namespace shoal::tools
