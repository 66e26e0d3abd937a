#pragma once

// The client credentials file (docs/security.md, "Credentials file"): how the CLI and
// Database::Connect find the identity to present to a cluster without flags. JSON:
//
//   {"clusters": [
//     {"cluster": "shoal://127.0.0.1:7400", "user": "admin",
//      "ca": "/home/ann/shoal-local/certs/ca.crt",
//      "cert": "/home/ann/shoal-local/certs/client.admin.crt",
//      "key": "/home/ann/shoal-local/certs/client.admin.key"}
//   ]}
//
// One entry per cluster, found by any coordinator address the client dials (loopback names of one
// port are one address). Paths may be
// relative to the file's directory. The file names key files, never holds a key; an entry may
// hold the user's `password` beside `user` (then the client authenticates as that user by
// password, docs/security.md), so the file is written 0600. Unknown fields of an entry are kept
// when another entry is written.
//
// Where: $SHOAL_CREDENTIALS, else $XDG_CONFIG_HOME/shoal/credentials, else
// $HOME/.config/shoal/credentials. `shoal local` registers its cluster there (and writes a
// one-entry file in its data directory).
//
// Thread-safety: stateless functions. RegisterCredentials serializes writers of one file across
// processes with flock on "<file>.lock" and replaces the file by rename, so a reader sees the
// old or the new file.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"
#include "src/security/tls_files.h"

namespace shoal::security {

// The user of a client certificate when none is named.
inline constexpr std::string_view kDefaultUser = "admin";
inline constexpr std::string_view kCredentialsEnvironment = "SHOAL_CREDENTIALS";

struct ClusterCredentials {
  std::string cluster{};  // "shoal://HOST:PORT[,HOST:PORT...]"
  std::string user{};
  std::string ca{};  // paths, absolute once read
  std::string cert{};
  std::string key{};
  // The user's password (docs/security.md, "Users and roles"); "": the certificate's user.
  std::string password{};
};

// The file the header's "Where" names ("" when neither variable nor HOME is set).
[[nodiscard]] std::string DefaultCredentialsPath();

// Every entry of the file at `path`: kNotFound if it does not exist, kInvalidArgument naming
// the file for anything malformed.
[[nodiscard]] StatusOr<std::vector<ClusterCredentials>> ReadCredentialsFile(
    const std::string& path);

// Adds `entry` to the file at `path` (created 0600, its directory 0700), replacing an entry of
// the same coordinators.
[[nodiscard]] Status RegisterCredentials(const std::string& path, const ClusterCredentials& entry);

// How a client chooses its identity; the first that applies wins.
struct ClientSecurityRequest {
  bool insecure = false;           // plaintext (a cluster started with --insecure)
  std::string certs_dir{};         // ca.crt and client.<user>.crt/.key of `shoal certs`
  std::string user{};              // "" = kDefaultUser
  std::string credentials_file{};  // "" = DefaultCredentialsPath()
};

// The TLS files to dial `coordinators` ("HOST:PORT[,...]") with, or nullopt for plaintext.
// From a credentials file: the entry sharing a coordinator address with `coordinators`, else
// the file's only entry. kFailedPrecondition naming every way to give credentials when none
// apply.
[[nodiscard]] StatusOr<std::optional<TlsFiles>> ResolveClientTls(
    const ClientSecurityRequest& request, std::string_view coordinators);

}  // namespace shoal::security
