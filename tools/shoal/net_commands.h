#pragma once

// The networked commands of `shoal` (docs/design/network.md):
//   server_commands.cc  coordinator, node, local
//   data_commands.cc    put, get, delete, query, status
//   batch_command.cc    batch
//   admin_commands.cc   add-node, remove-node, plan, rebalance, thresholds, failpoint
//   hotspot_commands.cc declare, apply (sharded fields, paper 003)

#include <CLI/CLI.hpp>

#include "src/common/status.h"

namespace shoal::tools {

void AddServerCommands(CLI::App& app);
void AddDataCommands(CLI::App& app);
void AddBatchCommand(CLI::App& app);
void AddAdminCommands(CLI::App& app);
void AddHotspotCommands(CLI::App& app);

// Prints "error: NOT_FOUND: ..." (without the payloads ToString appends) and returns exit code 1.
int FailCommand(const Status& status);

}  // namespace shoal::tools
