#pragma once

// `shoal local`'s certificates and credentials (docs/security.md, "shoal local"): at the first
// start, a CA, a node certificate for the loopback addresses and a client certificate of the
// user `admin` in DATA/certs; at every start, DATA/credentials (one entry: this cluster) and,
// once the cluster serves, this cluster's entry in the user's credentials file, so that the CLI
// and Database::Connect of whoever started it need no flag. A later start reuses the
// certificates.
//
// The user `admin` (the cluster's first user, process/user_admin.h) also gets a password,
// generated at the first start and kept in the credentials entry (0600, beside the client
// certificate it names): SetLocalAdminPassword stores its hash in the cluster once it serves, so
// the credentials file authenticates by certificate and by password alike.
//
// Thread-safety: called once, by shoal local's main thread.

#include <memory>
#include <string>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/status.h"
#include "src/net/grpc_runtime.h"
#include "src/security/credentials_file.h"

namespace shoal::tools {

struct LocalSecurity {
  bool secure = true;                // false: --insecure
  std::string certs_dir{};           // absolute
  std::string credentials_file{};    // DATA/credentials
  std::string registered_in{};       // the user's credentials file ("" when not registered)
  std::string registration_error{};  // why not, when it failed (the cluster runs anyway)
  // This cluster's entry, as in DATA/credentials: `admin` with its password (never printed).
  security::ClusterCredentials entry{};
};

// For a secure cluster (`insecure` false): the certificates and DATA/credentials, for the
// coordinator `cluster` ("HOST:PORT"). The errors of certificate creation.
[[nodiscard]] StatusOr<LocalSecurity> PrepareLocalSecurity(const std::string& data_dir,
                                                           const std::string& cluster,
                                                           bool insecure);

// Registers the cluster's entry of DATA/credentials in the user's credentials file, once it
// serves: a start that fails (its ports taken by another cluster) leaves the user's entry for
// that address alone. A failure is only reported in registration_error.
void RegisterLocalCluster(LocalSecurity* security);

// A client runtime of the cluster served at `cluster` ("HOST:PORT"), as `admin` by certificate
// (plaintext for an --insecure cluster).
[[nodiscard]] StatusOr<std::unique_ptr<net::GrpcRuntime>> StartLocalRuntime(
    const LocalSecurity& security, const std::string& cluster);

// Gives `admin` its password in the cluster `runtime` reaches (StartLocalRuntime: as `admin`
// by certificate).
[[nodiscard]] Status SetLocalAdminPassword(const LocalSecurity& security,
                                           net::GrpcRuntime& runtime);

// The security arguments of shoal local's coordinator and nodes.
[[nodiscard]] std::vector<std::string> ChildSecurityArgs(const LocalSecurity& security);

// How shoal local itself connects (to see that the cluster serves).
[[nodiscard]] ConnectOptions LocalConnectOptions(const LocalSecurity& security);

// The lines shoal local prints about security: where the credentials are, and how to connect
// from another shell, program or user.
[[nodiscard]] std::vector<std::string> LocalSecurityLines(const LocalSecurity& security,
                                                          const std::string& cluster);

}  // namespace shoal::tools
