#include "src/security/pem_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace shoal::security::internal {
namespace {

std::string Errno(std::string_view what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

StatusOr<std::string> BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size <= 0 || data == nullptr) return InternalError("PEM: " + OpenSslError());
  return std::string(data, static_cast<size_t>(size));
}

Status CheckExists(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return NotFoundError(fmt::format("{}: no such file", path));
  return OkStatus();
}

}  // namespace

std::string OpenSslError() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char text[256] = {};
    ERR_error_string_n(code, text, sizeof(text));
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? "unknown error" : out;
}

StatusOr<std::vector<X509Ptr>> ReadCertificates(const std::string& path) {
  SHOAL_RETURN_IF_ERROR(CheckExists(path));
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr) return InvalidArgumentError(fmt::format("open {}: {}", path, OpenSslError()));
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the end of the file reads as an error
  if (certs.empty()) return InvalidArgumentError(fmt::format("{} holds no PEM certificate", path));
  return certs;
}

StatusOr<PkeyPtr> ReadPrivateKey(const std::string& path) {
  SHOAL_RETURN_IF_ERROR(CheckExists(path));
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr) return InvalidArgumentError(fmt::format("open {}: {}", path, OpenSslError()));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    ERR_clear_error();
    return InvalidArgumentError(fmt::format("{} holds no PEM private key", path));
  }
  return key;
}

StatusOr<std::string> CertificatePem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return InternalError("PEM: " + OpenSslError());
  }
  return BioText(bio.get());
}

StatusOr<std::string> PrivateKeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return InternalError("PEM: " + OpenSslError());
  }
  return BioText(bio.get());
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, unsigned mode) {
  const std::string temporary = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        static_cast<mode_t>(mode));
  if (fd < 0) return IoError(Errno("create", temporary));
  Status status;
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) status = IoError(Errno("chmod", temporary));
  size_t written = 0;
  while (status.ok() && written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = IoError(Errno("write", temporary));
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (status.ok() && ::fsync(fd) != 0) status = IoError(Errno("fsync", temporary));
  if (::close(fd) != 0 && status.ok()) status = IoError(Errno("close", temporary));
  if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    status = IoError(Errno("rename onto", path));
  }
  if (!status.ok()) ::unlink(temporary.c_str());
  return status;
}

}  // namespace shoal::security::internal
