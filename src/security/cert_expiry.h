#pragma once

// Certificates that expire soon: a process's own certificate and its CA's. Every node
// certificate `shoal local` or an operator creates at one time expires at one time, and a running
// process whose certificate expired has every handshake refused (a process refuses to start with
// one, CheckTlsFiles). So every coordinator and node checks its files at start and every hour,
// and logs a warning once a day from kCertExpiryWarningDays before the end (docs/security.md,
// "Rotation").

#include <absl/base/thread_annotations.h>
#include <absl/synchronization/mutex.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "src/security/tls_files.h"

namespace shoal::security {

inline constexpr int64_t kCertExpiryWarningDays = 30;

// A certificate of a TLS identity that ends within the warning window (or has ended).
struct ExpiringCertificate {
  std::string path{};
  std::string common_name{};
  int64_t not_after_unix = 0;
  int64_t seconds_left = 0;  // negative: expired
};

// Whole days in `seconds_left`; -1 once it is negative (ended).
[[nodiscard]] inline int64_t DaysLeft(int64_t seconds_left) {
  return seconds_left < 0 ? -1 : seconds_left / 86'400;
}

// The CA bundle's first certificate and the identity's certificate of `files` whose end is less
// than `window_seconds` after `now_unix`. A file that cannot be read (mid-rotation) is skipped.
[[nodiscard]] std::vector<ExpiringCertificate> ExpiringCertificates(const TlsFiles& files,
                                                                    int64_t now_unix,
                                                                    int64_t window_seconds);

struct CertificateExpiryOptions {
  TlsFiles files{};
  int64_t window_seconds = kCertExpiryWarningDays * 86'400;
  std::chrono::milliseconds period{std::chrono::hours(1)};
  std::function<int64_t()> now_unix{};  // empty: the system clock
};

// Checks `files` at construction and every `period` on a thread of its own until destroyed;
// each expiring certificate is logged once per whole day left (`tls.certificate_expires_soon`,
// a warning) and once when it has expired (`tls.certificate_expired`, an error). Thread-safe.
class CertificateExpiryMonitor {
 public:
  explicit CertificateExpiryMonitor(CertificateExpiryOptions options);
  ~CertificateExpiryMonitor();
  CertificateExpiryMonitor(const CertificateExpiryMonitor&) = delete;
  CertificateExpiryMonitor& operator=(const CertificateExpiryMonitor&) = delete;

  // One check now: what it found, logged as above.
  std::vector<ExpiringCertificate> CheckNow() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const CertificateExpiryOptions options_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Per certificate file, the days left last logged (-1: logged as expired).
  std::map<std::string, int64_t> logged_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shoal::security
