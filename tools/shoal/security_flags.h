#pragma once

// The security options of the `shoal` commands (docs/security.md):
//   - servers (coordinator, node): --certs-dir DIR (its ca.crt, node.crt, node.key) or
//     --insecure, one of them required; --cert-reload-seconds; --crl-dir (default: crl/ beside
//     ca.crt, security/revocation.h);
//   - clients (put, get, status, add-node, ...): --certs-dir DIR [--user U], --credentials FILE,
//     or --insecure; none of them: the credentials file ($SHOAL_CREDENTIALS, else
//     ~/.config/shoal/credentials).
// Thread-safety: the flag structs are filled by CLI11 on the main thread, then read.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "include/shoal/shoal.h"
#include "src/common/status.h"
#include "src/net/tls_credentials.h"

namespace shoal::tools {

struct ServerSecurityFlags {
  std::string certs_dir{};
  bool insecure = false;
  uint32_t reload_seconds = net::kDefaultCertReloadSeconds;
  std::string crl_dir{};  // "": security::DefaultCrlDir(certs_dir/ca.crt)
};

void AddServerSecurityOptions(CLI::App* command, ServerSecurityFlags* flags);

// The TransportSecurity of a coordinator or node process. kInvalidArgument, naming both
// options, when neither or both are given; the files' own errors otherwise (checked again,
// with the key, when the runtime starts).
[[nodiscard]] StatusOr<net::TransportSecurity> ServerSecurity(const ServerSecurityFlags& flags);

// Logs the warning every --insecure server gives at its start.
void WarnInsecure(const ServerSecurityFlags& flags);

// A server process's gRPC log lines (e.g. a peer's failed TLS handshake) become `grpc.log`
// warnings of its event log (src/common/log.h), in its format.
void RouteGrpcLog();

struct ClientSecurityFlags {
  std::string certs_dir{};
  std::string user{};
  std::string credentials{};
  bool insecure = false;
};

void AddClientSecurityOptions(CLI::App* command, ClientSecurityFlags* flags);

// Database::Connect's options for these flags.
[[nodiscard]] ConnectOptions ConnectOptionsOf(const ClientSecurityFlags& flags);

// The TransportSecurity of a client command dialling `coordinators` ("HOST:PORT[,...]").
[[nodiscard]] StatusOr<net::TransportSecurity> ClientSecurity(const ClientSecurityFlags& flags,
                                                              const std::string& coordinators);

// `shoal certs create-ca|create-node|create-client|list|revoke|list-revoked` and `shoal
// credentials add`.
void AddCertsCommands(CLI::App& app);

}  // namespace shoal::tools
