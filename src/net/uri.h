#pragma once

// Cluster URIs: "shoal://HOST:PORT[,HOST:PORT...]" or a bare "HOST:PORT" names the coordinator.
// Pure functions; thread-safe.

#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::net {

// The first coordinator address of `uri` (one coordinator per cluster for now).
// kInvalidArgument for anything that is not HOST:PORT with a port in [1, 65535].
[[nodiscard]] inline StatusOr<std::string> CoordinatorOf(std::string_view uri) {
  constexpr std::string_view kScheme = "shoal://";
  if (uri.substr(0, kScheme.size()) == kScheme) uri.remove_prefix(kScheme.size());
  if (const auto comma = uri.find(','); comma != std::string_view::npos) uri = uri.substr(0, comma);
  const auto colon = uri.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == uri.size()) {
    return InvalidArgumentError("expected shoal://HOST:PORT, got '" + std::string(uri) + "'");
  }
  int port = 0;
  for (char c : uri.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535)
      return InvalidArgumentError("bad port in '" + std::string(uri) + "'");
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535)
    return InvalidArgumentError("bad port in '" + std::string(uri) + "'");
  return std::string(uri);
}

}  // namespace shoal::net
