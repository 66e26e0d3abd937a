#pragma once

// OpenSSL handles, PEM reading and writing, and atomic file writes shared by the security
// layer's sources; not part of its interface. Stateless; thread-safe.

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal::security::internal {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free_all(bio); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

// The certificate of `certs_dir`/ca.crt that `ca_key` (or certs_dir/ca.key) belongs to, and
// that key: what issues certificates and CRLs (certificates.cc).
struct Ca {
  X509Ptr cert;
  PkeyPtr key;
};
[[nodiscard]] StatusOr<Ca> LoadCa(const std::string& certs_dir, const std::string& ca_key);

// OpenSSL's error queue as one line (emptied); "unknown error" when it is empty.
[[nodiscard]] std::string OpenSslError();

// Every PEM certificate of the file at `path`, at least one: kNotFound for a missing file,
// kInvalidArgument for a file with no certificate.
[[nodiscard]] StatusOr<std::vector<X509Ptr>> ReadCertificates(const std::string& path);
// The PEM private key at `path`. Its errors never quote the file's content.
[[nodiscard]] StatusOr<PkeyPtr> ReadPrivateKey(const std::string& path);

[[nodiscard]] StatusOr<std::string> CertificatePem(X509* cert);
// PKCS#8, unencrypted (the file's mode protects it).
[[nodiscard]] StatusOr<std::string> PrivateKeyPem(EVP_PKEY* key);

// Writes `contents` to a temporary file beside `path` with `mode` (whatever the umask), fsyncs
// it and renames it onto `path`.
[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                         unsigned mode);

}  // namespace shoal::security::internal
