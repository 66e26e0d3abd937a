#pragma once

// Cluster URIs: "shoal://HOST:PORT[,HOST:PORT...]" or a bare "HOST:PORT[,...]" names the
// coordinators.
// Pure functions; thread-safe.

#include <string>
#include <string_view>

#include "src/common/host_port.h"
#include "src/common/status.h"

namespace shoal::net {

// The coordinator addresses of `uri`, as "HOST:PORT[,HOST:PORT...]" (several coordinators share
// one ZooKeeper path; one of them leads, docs/design/network.md "Coordinator failover").
// kInvalidArgument unless every entry is HOST:PORT with a port in [1, 65535], or for another
// scheme (http://...).
[[nodiscard]] inline StatusOr<std::string> CoordinatorsOf(std::string_view uri) {
  constexpr std::string_view kScheme = "shoal://";
  if (uri.substr(0, kScheme.size()) == kScheme) {
    uri.remove_prefix(kScheme.size());
  } else if (uri.find("://") != std::string_view::npos) {
    return InvalidArgumentError(
        "'" + std::string(uri) +
        "' is not a Shoal cluster: expected shoal://HOST:PORT[,HOST:PORT...]");
  }
  SHOAL_RETURN_IF_ERROR(CheckHostPortList(uri));
  return std::string(uri);
}

}  // namespace shoal::net
