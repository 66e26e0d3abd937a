// Passwords typed or piped into a `shoal` command (password_input.h).

#include "tools/shoal/password_input.h"

#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace shoal::tools {

StatusOr<std::string> ReadPasswordLine() {
  std::string line;
  if (!std::getline(std::cin, line)) return InvalidArgumentError("no password on stdin");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

StatusOr<std::string> PromptPassword(const char* question) {
  std::fprintf(stderr, "%s", question);
  termios saved{};
  const bool tty = ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    (void)::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
  }
  auto line = ReadPasswordLine();
  if (tty) (void)::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
  std::fprintf(stderr, "\n");
  return line;
}

}  // namespace shoal::tools
