#pragma once

// `shoal sim`: runs the deterministic cluster simulation (tests/sim/cluster_sim.h) over a range
// of seeds and reports failures with the seeds that replay them.

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddSimCommand(CLI::App& app);

}  // namespace shoal::tools
