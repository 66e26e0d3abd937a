#pragma once

// The networked commands of `shoal` (docs/design/network.md):
//   server_commands.cc  coordinator, node
//   local_command.cc    local (server_flags.h)
//   data_commands.cc    put, get, delete, query, status
//   batch_command.cc    batch
//   admin_commands.cc   add-node, remove-node, plan, rebalance, thresholds, failpoint
//   hotspot_commands.cc declare, apply (sharded fields, paper 003)
//   security_commands.cc certs, credentials, and every command's security options
//   user_commands.cc    user add, remove, list, set-password, grant

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "src/cluster/move_ends.h"
#include "src/common/status.h"
#include "src/net/grpc_runtime.h"
#include "tools/shoal/security_flags.h"

namespace shoal::tools {

void AddServerCommands(CLI::App& app);
void AddDataCommands(CLI::App& app);
void AddBatchCommand(CLI::App& app);
void AddAdminCommands(CLI::App& app);
void AddHotspotCommands(CLI::App& app);
void AddUserCommands(CLI::App& app);

// A client runtime of the coordinators named by `cluster` ("shoal://A,B", "HOST:PORT", or the
// host:port of any one process), with the identity `security` chooses: what every networked
// command talks through.
[[nodiscard]] StatusOr<std::unique_ptr<net::GrpcRuntime>> StartCommandRuntime(
    const std::string& cluster, const ClientSecurityFlags& security);

// Prints "error: NOT_FOUND: ..." (without the payloads ToString appends), with the storage reason
// when it says more than the code ("error: NOT_FOUND (UNKNOWN_COLLECTION): ..."), and returns
// exit code 1.
int FailCommand(const Status& status);

// One line of a move for `shoal plan` and `shoal status`, e.g. "bucket 5: node 2 -> node 4
// (DETAIL)", "bucket 5: new copy on node 4 (DETAIL)" or a handoff's primaries.
[[nodiscard]] std::string MoveLine(uint32_t bucket, const cluster::MoveEnds& ends,
                                   std::string_view detail);

}  // namespace shoal::tools
