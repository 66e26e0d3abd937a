#pragma once

// `shoal demo`: the main job of `make demo`. An embedded cluster (3 storage nodes, 32 buckets, a
// coordinator with its balancer) on one ThreadRuntime takes a mixed workload from several client
// threads while a fourth node joins and the first one leaves. Every acknowledged write is checked
// at the end against a model of the expected state, and a full query must return every live
// document exactly once. The summary reports the bytes moved against the optimum, the time until
// the new node serves, the throughput before, during and after the moves, and the fence pauses.

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddDemoCommand(CLI::App& app);

}  // namespace shoal::tools
