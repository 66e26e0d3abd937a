#pragma once

// Cluster URIs: "shoal://HOST:PORT[,HOST:PORT...]" or a bare "HOST:PORT[,...]" names the
// coordinators.
// Pure functions; thread-safe.

#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::net {

namespace internal {

// Checks one "HOST:PORT".
[[nodiscard]] inline Status CheckHostPort(std::string_view host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == host_port.size()) {
    return InvalidArgumentError("expected shoal://HOST:PORT, got '" + std::string(host_port) + "'");
  }
  int port = 0;
  for (char c : host_port.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535)
      return InvalidArgumentError("bad port in '" + std::string(host_port) + "'");
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535)
    return InvalidArgumentError("bad port in '" + std::string(host_port) + "'");
  return OkStatus();
}

}  // namespace internal

// The coordinator addresses of `uri`, as "HOST:PORT[,HOST:PORT...]" (several coordinators share
// one ZooKeeper path; one of them leads, docs/design/network.md "Coordinator failover").
// kInvalidArgument unless every entry is HOST:PORT with a port in [1, 65535].
[[nodiscard]] inline StatusOr<std::string> CoordinatorsOf(std::string_view uri) {
  constexpr std::string_view kScheme = "shoal://";
  if (uri.substr(0, kScheme.size()) == kScheme) uri.remove_prefix(kScheme.size());
  std::string_view rest = uri;
  while (true) {
    const auto comma = rest.find(',');
    SHOAL_RETURN_IF_ERROR(internal::CheckHostPort(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return std::string(uri);
}

}  // namespace shoal::net
