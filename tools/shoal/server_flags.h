#pragma once

// The options every server process command (`shoal coordinator`, `shoal node`, `shoal local`)
// shares, and `shoal local` itself (local_command.cc).

#include <CLI/CLI.hpp>
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

// `--enable-failpoints`, the same on every server command.
void AddFailpointOption(CLI::App* command, bool* enable);

// `shoal local`: a coordinator and N nodes as child processes on loopback.
void AddLocalCommand(CLI::App& app);

}  // namespace shoal::tools
