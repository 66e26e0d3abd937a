#include "src/security/cert_expiry.h"

#include <absl/time/time.h>

#include <ctime>
#include <string>
#include <utility>

#include "src/common/log.h"
#include "src/security/certificates.h"

namespace shoal::security {

std::vector<ExpiringCertificate> ExpiringCertificates(const TlsFiles& files, int64_t now_unix,
                                                      int64_t window_seconds) {
  std::vector<ExpiringCertificate> out;
  for (const std::string& path : {files.ca_cert, files.cert}) {
    if (path.empty()) continue;
    StatusOr<CertificateInfo> info = ReadCertificate(path);
    if (!info.ok()) continue;
    const int64_t left = info->not_after_unix - now_unix;
    if (left >= window_seconds) continue;
    out.push_back(ExpiringCertificate{.path = path,
                                      .common_name = info->common_name,
                                      .not_after_unix = info->not_after_unix,
                                      .seconds_left = left});
  }
  return out;
}

CertificateExpiryMonitor::CertificateExpiryMonitor(CertificateExpiryOptions options)
    : options_(std::move(options)) {
  (void)CheckNow();
  thread_ = std::thread([this] { Loop(); });
}

CertificateExpiryMonitor::~CertificateExpiryMonitor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

std::vector<ExpiringCertificate> CertificateExpiryMonitor::CheckNow() {
  const int64_t now =
      options_.now_unix ? options_.now_unix() : static_cast<int64_t>(std::time(nullptr));
  std::vector<ExpiringCertificate> found =
      ExpiringCertificates(options_.files, now, options_.window_seconds);
  absl::MutexLock lock(&mu_);
  for (const ExpiringCertificate& cert : found) {
    const int64_t days = DaysLeft(cert.seconds_left);
    auto [it, added] = logged_.emplace(cert.path, days);
    if (!added && it->second == days) continue;
    it->second = days;
    if (days < 0) {
      log::Error("tls.certificate_expired",
                 {{"file", cert.path},
                  {"subject", cert.common_name},
                  {"expired", DateOf(cert.not_after_unix)},
                  {"hint", "every handshake with it fails; see docs/security.md, Rotation"}});
    } else {
      log::Warning("tls.certificate_expires_soon",
                   {{"file", cert.path},
                    {"subject", cert.common_name},
                    {"expires", DateOf(cert.not_after_unix)},
                    {"days_left", days},
                    {"hint", "replace it before then; see docs/security.md, Rotation"}});
    }
  }
  return found;
}

void CertificateExpiryMonitor::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(options_.period))) {
        return;
      }
    }
    (void)CheckNow();
  }
}

}  // namespace shoal::security
