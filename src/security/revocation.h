#pragma once

// Certificate revocation lists of a Shoal cluster CA (docs/security.md, "Revocation"): a CRL
// signed by the CA names the serial numbers of certificates no process may trust any more,
// however long they have left to live.
//
// A CRL directory holds, per CA, the CRLs in OpenSSL's hashed-directory naming, which gRPC's
// `set_crl_directory` reads through X509_LOOKUP_hash_dir: `<issuer-hash>.r<N>`, where the hash
// is X509_NAME_hash_ex of the CA's subject (`openssl x509 -hash`) and N counts from 0. Each
// revocation writes the next N and keeps the earlier files: OpenSSL's lookup remembers the
// highest N it loaded and only ever reads files after it, so a process picks up a new CRL at its
// next handshake without a restart, while a rewritten file would never be read again. The file
// with the highest N holds every serial revoked so far, a CRL number one above the previous one
// and the latest lastUpdate (OpenSSL prefers the newest CRL of an issuer). The default directory
// is `crl` beside the CA bundle (DefaultCrlDir); a missing or empty directory revokes nothing.
//
// Thread-safety: stateless functions. Revoke holds an exclusive flock on the CRL directory, so
// two revocations at once (processes or threads) both count.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal::security {

// The directory name of DefaultCrlDir.
inline constexpr std::string_view kCrlDirName = "crl";

// `crl` in the directory of the CA bundle `ca_cert_path`.
[[nodiscard]] std::string DefaultCrlDir(std::string_view ca_cert_path);

struct RevokedSerial {
  std::string serial_hex{};  // upper-case hex, as CertificateInfo::serial_hex
  int64_t revoked_unix = 0;
};

// What one CRL file says.
struct RevocationList {
  std::string path{};
  std::string issuer_common_name{};
  uint64_t number = 0;  // the CRL number extension: grows by one per revocation
  int64_t last_update_unix = 0;
  int64_t next_update_unix = 0;
  std::vector<RevokedSerial> revoked{};  // ordered by serial
};

struct RevokeOptions {
  std::string certs_dir{};  // its ca.crt holds the CA
  std::string ca_key{};     // the CA's key ("" = certs_dir/ca.key)
  std::string crl_dir{};    // "" = DefaultCrlDir(certs_dir/ca.crt); created if missing
  // What to revoke: certificate files (each must be issued by the CA) and serial numbers in hex
  // (colons allowed, as `openssl x509 -serial` prints them). Both may be empty: the CRL is then
  // issued again with the same serials (e.g. to push nextUpdate further).
  std::vector<std::string> cert_files{};
  std::vector<std::string> serials{};
  // nextUpdate, in days from now; 0: the CA's own expiry. A CRL past its nextUpdate fails every
  // handshake of the CA's certificates, so a short lifetime needs a revocation before it ends.
  int lifetime_days = 0;
};

// Writes the CA's next CRL (the header's naming) with every serial revoked before plus the new
// ones, and returns it. kFailedPrecondition for a certificate of another CA, for the CA's own
// serial, or for an existing CRL of the directory that the CA did not sign; kInvalidArgument for
// a bad serial or lifetime; kNotFound for a missing file.
[[nodiscard]] StatusOr<RevocationList> Revoke(const RevokeOptions& options);

// The CRL file `crl_path`, checked: signed by a CA of the bundle `ca_path`
// (kFailedPrecondition naming both otherwise).
[[nodiscard]] StatusOr<RevocationList> ReadRevocationList(const std::string& ca_path,
                                                          const std::string& crl_path);

// The current CRL (highest N) of each CA of `ca_path` that has one in `crl_dir`; empty when the
// directory is missing or holds none.
[[nodiscard]] StatusOr<std::vector<RevocationList>> ReadRevocationLists(const std::string& ca_path,
                                                                        const std::string& crl_dir);

// VerifyCertificate with the CRLs of `crl_dir` checked as a TLS handshake checks them (gRPC's
// rule: a CA without a CRL revokes nothing): kUnauthenticated naming the serial when a CRL
// revokes the certificate, or OpenSSL's reason (e.g. "CRL has expired") for another failure.
[[nodiscard]] Status VerifyNotRevoked(const std::string& ca_path, const std::string& crl_dir,
                                      const std::string& cert_path);

}  // namespace shoal::security
