#pragma once

// `shoal demo`: the main job of `make demo`. Until the cluster exists it is a short, readable
// placement demonstration: every scheme places the same keys on 10 nodes, then a node joins and
// one leaves, and the table shows balance, keys moved against the optimum, and lookup cost.

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddDemoCommand(CLI::App& app);

}  // namespace shoal::tools
