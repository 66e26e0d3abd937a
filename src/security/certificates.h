#pragma once

// The certificates of a Shoal cluster (docs/security.md): a cluster CA, node certificates that
// serve and dial (mutual TLS between the cluster's processes), and client certificates that name
// a user (CN = the user). Built with OpenSSL's library: ECDSA P-256 keys, SHA-256 signatures,
// X.509 v3 with the extensions TLS peers check (basic constraints, key usage, extended key usage,
// subject alternative names, key identifiers).
//
// A certs directory holds (file names below):
//   ca.crt                       the CA certificate (one or more PEM certificates: during a CA
//                                rotation it holds the old and the new CA, both trusted)
//   ca.key                       the CA's private key (only where certificates are issued)
//   node.crt, node.key           a node's (or coordinator's) identity: serverAuth and clientAuth,
//                                CN "node", SANs the hosts it is dialled by
//   client.<user>.crt/.key       a user's identity: clientAuth, CN <user>
//   crl/                         the CA's revocation lists (revocation.h)
// Private keys are written 0600, certificates 0644, each to a temporary file renamed into place
// (a reader never sees half a file; FileWatcherCertificateProvider reloads the new one).
//
// Lifetimes: the CA 10 years (kCaLifetimeDays: replacing it touches every machine), node and
// client certificates 5 years (kLeafLifetimeDays: renewed by `create-node --overwrite`, which
// running processes pick up without a restart). notBefore is one hour back, so that a machine
// whose clock is a little behind accepts a certificate issued elsewhere.
//
// Thread-safety: stateless functions; files are the only shared state (two writers of the same
// file: the last rename wins).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal::security {

inline constexpr int kCaLifetimeDays = 3653;
inline constexpr int kLeafLifetimeDays = 1826;
// The common name of every node certificate; no user may be called so.
inline constexpr std::string_view kNodeCommonName = "node";

[[nodiscard]] std::string CaCertPath(std::string_view certs_dir);
[[nodiscard]] std::string CaKeyPath(std::string_view certs_dir);
[[nodiscard]] std::string NodeCertPath(std::string_view certs_dir);
[[nodiscard]] std::string NodeKeyPath(std::string_view certs_dir);
[[nodiscard]] std::string ClientCertPath(std::string_view certs_dir, std::string_view user);
[[nodiscard]] std::string ClientKeyPath(std::string_view certs_dir, std::string_view user);

// kInvalidArgument unless `user` is 1 to 64 letters, digits, '_', '.' or '-' starting with a
// letter, a digit or '_', and not kNodeCommonName.
[[nodiscard]] Status CheckUserName(std::string_view user);

struct CaOptions {
  std::string certs_dir{};  // created if missing (0700)
  int lifetime_days = kCaLifetimeDays;
  bool overwrite = false;  // replace an existing ca.crt / ca.key (else kAlreadyExists)
};

struct NodeCertOptions {
  std::string certs_dir{};  // ca.crt is read here; node.crt and node.key are written here
  std::string ca_key{};     // the CA's key ("" = certs_dir/ca.key)
  // DNS names and IP addresses the node is dialled by (its --advertise host). localhost,
  // 127.0.0.1 and ::1 are always added, so that a loopback cluster works with any node cert.
  std::vector<std::string> hosts{};
  int lifetime_days = kLeafLifetimeDays;
  bool overwrite = false;  // rotation: replace node.crt / node.key
};

struct ClientCertOptions {
  std::string certs_dir{};
  std::string ca_key{};  // "" = certs_dir/ca.key
  std::string user{};    // CheckUserName
  int lifetime_days = kLeafLifetimeDays;
  bool overwrite = false;
};

// Each writes its key and certificate as the header says. kAlreadyExists when a file it would
// write exists and !overwrite (nothing is written then); kInvalidArgument for a bad host, user
// or lifetime; kNotFound / kFailedPrecondition for a missing or unusable CA.
[[nodiscard]] Status CreateCa(const CaOptions& options);
[[nodiscard]] Status CreateNodeCert(const NodeCertOptions& options);
[[nodiscard]] Status CreateClientCert(const ClientCertOptions& options);

// What a certificate says, for tests, `shoal certs list` and error messages.
struct CertificateInfo {
  std::string common_name{};
  std::string issuer_common_name{};
  std::string serial_hex{};
  std::vector<std::string> dns_names{};
  std::vector<std::string> ip_addresses{};  // printed as text ("127.0.0.1", "::1")
  int64_t not_before_unix = 0;
  int64_t not_after_unix = 0;
  bool is_ca = false;
  bool server_auth = false;  // extended key usage
  bool client_auth = false;
};

// A certificate's or CRL's time as its UTC date, "2031-12-01".
[[nodiscard]] std::string DateOf(int64_t unix_seconds);

// The first certificate of the PEM file at `path`.
[[nodiscard]] StatusOr<CertificateInfo> ReadCertificate(const std::string& path);
// The same from PEM text.
[[nodiscard]] StatusOr<CertificateInfo> ParseCertificate(std::string_view pem);

// OK when the first certificate of `cert_path` chains to a certificate of `ca_path` (the trusted
// roots) and is valid now (X509_verify_cert); kUnauthenticated naming OpenSSL's reason otherwise
// (another CA, expired, ...); kNotFound / kInvalidArgument for a missing or unreadable file.
[[nodiscard]] Status VerifyCertificate(const std::string& ca_path, const std::string& cert_path);
// OK when the private key at `key_path` belongs to the certificate at `cert_path`.
[[nodiscard]] Status CheckKeyMatches(const std::string& cert_path, const std::string& key_path);

}  // namespace shoal::security
