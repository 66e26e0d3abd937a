#pragma once

// The options every server process command (`shoal coordinator`, `shoal node`, `shoal local`)
// shares, and `shoal local` itself (local_command.cc).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace shoal::tools {

// The structured event log of a server process (src/common/log.h), on stderr.
struct LogFlags {
  std::string level = "info";
  std::string format = "text";
};
void AddLogOptions(CLI::App* command, LogFlags* flags);
// Turns the event log on for this process; false (after a message) on a bad flag.
[[nodiscard]] bool StartLog(const LogFlags& flags, std::string process);

// Whether `replicas` copies of each bucket fit on `nodes` nodes (named by the flag `nodes_flag`)
// and `min_in_sync` is at most `replicas`; false after a message on stderr.
[[nodiscard]] bool CheckReplicaFlags(uint32_t replicas, uint32_t nodes, const char* nodes_flag,
                                     uint32_t min_in_sync);

// `--enable-failpoints`, the same on every server command.
void AddFailpointOption(CLI::App* command, bool* enable);

// `shoal local`: a coordinator and N nodes as child processes on loopback.
void AddLocalCommand(CLI::App& app);

}  // namespace shoal::tools
