#include "src/security/tls_files.h"

#include "src/security/certificates.h"
#include "src/security/revocation.h"

namespace shoal::security {

TlsFiles NodeTlsFiles(std::string_view certs_dir) {
  return {.ca_cert = CaCertPath(certs_dir),
          .cert = NodeCertPath(certs_dir),
          .key = NodeKeyPath(certs_dir)};
}

TlsFiles ClientTlsFiles(std::string_view certs_dir, std::string_view user) {
  return {.ca_cert = CaCertPath(certs_dir),
          .cert = ClientCertPath(certs_dir, user),
          .key = ClientKeyPath(certs_dir, user)};
}

Status CheckTlsFiles(const TlsFiles& files) {
  SHOAL_RETURN_IF_ERROR(CheckKeyMatches(files.cert, files.key));
  SHOAL_RETURN_IF_ERROR(VerifyCertificate(files.ca_cert, files.cert));
  return VerifyNotRevoked(files.ca_cert, CrlDirOf(files), files.cert);
}

std::string CrlDirOf(const TlsFiles& files) {
  return files.crl_dir.empty() ? DefaultCrlDir(files.ca_cert) : files.crl_dir;
}

}  // namespace shoal::security
