#pragma once

// Passwords typed or piped into a `shoal` command. A password is never taken on the command line
// (other users of the machine see arguments in the process list): it is read from the first line
// of stdin, or asked on the terminal without echo.
//
// Thread-safety: uses the process's stdin and terminal; call from one thread.

#include <string>

#include "src/common/status.h"

namespace shoal::tools {

// The first line of stdin, without its line break; kInvalidArgument when stdin has none.
[[nodiscard]] StatusOr<std::string> ReadPasswordLine();

// Asks `question` on stderr and reads one line with the terminal's echo off.
[[nodiscard]] StatusOr<std::string> PromptPassword(const char* question);

}  // namespace shoal::tools
