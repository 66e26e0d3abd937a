#pragma once

// The networked commands of `shoal` (docs/design/network.md):
//   server_commands.cc  coordinator, node, local
//   data_commands.cc    put, get, delete, query, status
//   admin_commands.cc   add-node, remove-node, plan, rebalance

#include <CLI/CLI.hpp>

namespace shoal::tools {

void AddServerCommands(CLI::App& app);
void AddDataCommands(CLI::App& app);
void AddAdminCommands(CLI::App& app);

}  // namespace shoal::tools
