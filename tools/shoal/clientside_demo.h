#pragma once

// `shoal clientside-demo`: client-side sharding (paper 000) over "dumb" shards. A collection on
// 2 shards grows to 3 and shrinks back to 2 while writer clients and a query client run; the
// rebalancer is killed at random points and resumed. Every acknowledged write is checked at the
// end against an exact oracle; the summary reports lost writes (must be 0), resurrected deletes,
// wrong results and query anomalies, and the process fails if any is not 0.

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddClientsideDemoCommand(CLI::App& app);

}  // namespace shoal::tools
