#pragma once

// Pieces of the linearizability checker shared by its source files (linearizability.cc,
// linearizability_history.cc); not part of its interface. Stateless; thread-safe.

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace shoal::sim::internal {

// A register value as the checker's explanations print it.
[[nodiscard]] inline std::string Quoted(std::string_view value) {
  return fmt::format("\"{}\"", value);
}

}  // namespace shoal::sim::internal
