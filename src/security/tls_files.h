#pragma once

// TlsFiles: the three files a process's TLS identity is made of (a trusted CA bundle, its
// certificate, its private key), as the network layer loads and reloads them
// (src/net/tls_credentials.h). Where they come from: a node's certs directory (NodeTlsFiles), a
// user's (ClientTlsFiles), or a client's credentials file (credentials_file.h).
//
// Thread-safety: a value type; the functions are stateless.

#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::security {

struct TlsFiles {
  std::string ca_cert{};  // PEM roots every peer's certificate must chain to
  std::string cert{};     // this process's certificate (PEM)
  std::string key{};      // its private key (PEM)
  // A client's user and password, sent with every call over this TLS identity (call metadata;
  // net/tls_credentials.h); "": the user is the certificate's common name.
  std::string user{};
  std::string password{};
  // The CRLs every peer's certificate is checked against (security/revocation.h); "": the
  // default, DefaultCrlDir(ca_cert). A missing or empty directory revokes nothing.
  std::string crl_dir{};
};

// files.crl_dir, else DefaultCrlDir(files.ca_cert).
[[nodiscard]] std::string CrlDirOf(const TlsFiles& files);

// ca.crt, node.crt and node.key of `certs_dir`: the identity of a coordinator or a node.
[[nodiscard]] TlsFiles NodeTlsFiles(std::string_view certs_dir);
// ca.crt, client.<user>.crt and client.<user>.key of `certs_dir`.
[[nodiscard]] TlsFiles ClientTlsFiles(std::string_view certs_dir, std::string_view user);

// Checks before anything listens or dials, so that a mistake is one clear error at start rather
// than handshakes failing later: every file is readable, the key belongs to the certificate, and
// the certificate chains to the CA bundle, is valid now and is not revoked by a CRL of
// CrlDirOf(files) (a process never starts with an identity its peers refuse). The errors name
// files, never their content.
[[nodiscard]] Status CheckTlsFiles(const TlsFiles& files);

}  // namespace shoal::security
