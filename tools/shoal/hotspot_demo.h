#pragma once

// `shoal hotspot-demo`: a hot-spot object (paper 003). One question of an embedded database has
// its "votes" declared as an automatically sharded sum; many threads vote on it at once while the
// demo prints votes/s, conflicts/s and the shard count once a second, then one slow voter lets the
// shard count shrink. The summary compares the acknowledged votes with the total read back; the
// process fails if a vote was lost (or counted without being sent).

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddHotspotDemoCommand(CLI::App& app);

}  // namespace shoal::tools
