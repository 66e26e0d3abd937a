#pragma once

// The security options of the `shoal` commands (docs/security.md):
//   - servers (coordinator, node): --certs-dir DIR (its ca.crt, node.crt, node.key) or
//     --insecure, one of them required; --cert-reload-seconds; --crl-dir (default: crl/ beside
//     ca.crt, security/revocation.h); the limits on password guessing (AuthLimitFlags, which
//     shoal local passes on to its children);
//   - clients (put, get, status, add-node, ...): --certs-dir DIR [--user U], --credentials FILE,
//     or --insecure; none of them: the credentials file ($SHOAL_CREDENTIALS, else
//     ~/.config/shoal/credentials).
// Thread-safety: the flag structs are filled by CLI11 on the main thread, then read.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/status.h"
#include "src/net/tls_credentials.h"

namespace shoal::tools {

// The limits on password guessing of one process (docs/security.md, "Password guessing";
// docs/limits.md): --max-password-failures-per-address, --password-block-seconds,
// --max-password-failures-per-user and --max-password-verifications, each at least 1. Signed, so
// that a negative value is refused by its range, naming the flag, instead of wrapping around.
struct AuthLimitFlags {
  int64_t max_failures_per_address = security::kDefaultMaxFailuresPerAddress;
  int64_t block_seconds = security::kDefaultThrottleBackoff.count();
  int64_t max_failures_per_user = security::kDefaultMaxFailuresPerUser;
  int64_t max_verifications = security::DefaultConcurrentVerifications();
};

void AddAuthLimitOptions(CLI::App* command, AuthLimitFlags* flags);
// The Authenticator's options for these flags; kInvalidArgument naming the flag for a value
// below 1.
[[nodiscard]] StatusOr<security::AuthenticatorOptions> AuthenticatorOptionsOf(
    const AuthLimitFlags& flags);
// The same flags as arguments of a child process.
[[nodiscard]] std::vector<std::string> AuthLimitArgs(const AuthLimitFlags& flags);

struct ServerSecurityFlags {
  std::string certs_dir{};
  bool insecure = false;
  uint32_t reload_seconds = net::kDefaultCertReloadSeconds;
  std::string crl_dir{};  // "": security::DefaultCrlDir(certs_dir/ca.crt)
  AuthLimitFlags auth{};
};

// The server security options above, and AddAuthLimitOptions.
void AddServerSecurityOptions(CLI::App* command, ServerSecurityFlags* flags);

// The TransportSecurity of a coordinator or node process, with its limits on password guessing.
// kInvalidArgument, naming both options, when neither or both are given, or naming a limit
// below 1; the files' own errors otherwise (checked again, with the key, when the runtime
// starts).
[[nodiscard]] StatusOr<net::TransportSecurity> ServerSecurity(const ServerSecurityFlags& flags);

// Logs the warning every --insecure server gives at its start.
void WarnInsecure(const ServerSecurityFlags& flags);

// A server process's gRPC log lines (e.g. a peer's failed TLS handshake) become `grpc.log`
// warnings of its event log (src/common/log.h), in its format.
void RouteGrpcLog();

// The cluster a command talks to without --cluster: $SHOAL_CLUSTER, else this.
inline constexpr std::string_view kDefaultCluster = "shoal://127.0.0.1:7400";
// --cluster into *cluster, its default $SHOAL_CLUSTER, else kDefaultCluster.
void AddClusterOption(CLI::App* command, std::string* cluster,
                      const std::string& help = "shoal://HOST:PORT of the coordinator");

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
