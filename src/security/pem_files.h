#pragma once

// OpenSSL handles, PEM reading and writing, and atomic file writes shared by the security
// layer's sources; not part of its interface. Stateless; thread-safe.

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal::security::internal {

// An OpenSSL object owned by a unique_ptr that frees it with `kFree`.
template <auto kFree>
struct Free {
  template <class T>
  void operator()(T* p) const {
    kFree(p);
  }
};
using BioPtr = std::unique_ptr<BIO, Free<BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Free<BN_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Free<X509_STORE_free>>;
using StoreContextPtr = std::unique_ptr<X509_STORE_CTX, Free<X509_STORE_CTX_free>>;
using X509Ptr = std::unique_ptr<X509, Free<X509_free>>;

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
