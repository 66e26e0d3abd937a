#pragma once

// "HOST:PORT[,HOST:PORT...]" lists: the coordinators of a shoal:// URI and the members of a
// ZooKeeper ensemble in zk://. Pure functions; thread-safe.

#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal {

// kInvalidArgument naming `host_port` unless it is HOST:PORT with a non-empty host and a port
// in [1, 65535].
[[nodiscard]] inline Status CheckHostPort(std::string_view host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == host_port.size()) {
    return InvalidArgumentError("expected HOST:PORT, got '" + std::string(host_port) + "'");
  }
  int port = 0;
  for (char c : host_port.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) {
      return InvalidArgumentError("bad port in '" + std::string(host_port) + "'");
    }
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535) {
    return InvalidArgumentError("bad port in '" + std::string(host_port) + "'");
  }
  return OkStatus();
}

// CheckHostPort on every comma-separated entry of `list` (an empty entry fails).
[[nodiscard]] inline Status CheckHostPortList(std::string_view list) {
  while (true) {
    const auto comma = list.find(',');
    SHOAL_RETURN_IF_ERROR(CheckHostPort(list.substr(0, comma)));
    if (comma == std::string_view::npos) return OkStatus();
    list.remove_prefix(comma + 1);
  }
}

}  // namespace shoal
