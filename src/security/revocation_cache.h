#pragma once

// Whether a peer certificate is revoked, asked on every call (docs/security.md, "Revocation"):
// gRPC checks the CRLs only at a handshake, so a connection opened before a revocation would
// otherwise be served for as long as it stays open. A server asks RevocationCache::Check with
// the PEM of each call's peer certificate and refuses the call when it is revoked.
//
// The CRLs are those of revocation.h (ReadRevocationLists: the current CRL of each CA of the
// bundle, signature checked). The CRL directory is listed at most once per reread_interval, by
// the first call after the interval; it is read again only when its listing (names, sizes,
// modification times) differs from the last one read, and each such read starts a new
// generation. The decision for a certificate is cached by its PEM bytes together with the
// generation it was taken under: a call pays one hash lookup; a certificate is parsed once,
// when first seen, and a new generation only looks its serial up again. Bound: a CRL file that
// is complete in the directory refuses every call that starts reread_interval after it (twice
// that for a call that races with another thread's reread, which keeps the previous lists).
//
// A directory that cannot be read, or a CRL that fails its check, keeps the lists read before
// (logged once per listing, "tls.crl_unreadable"), as OpenSSL keeps the CRLs it loaded; a
// missing or empty directory revokes nothing. A certificate is revoked when a CRL of the CA
// named as its issuer lists its serial. At most max_cached certificates are cached: the cache
// is emptied when it is full.
//
// Thread-safety: thread-safe; Check runs on many threads at once, hits under a shared lock.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"

namespace shoal::security {

using RevocationClock = std::chrono::steady_clock;

inline constexpr std::chrono::milliseconds kDefaultCrlRereadInterval{1000};
inline constexpr size_t kMaxCachedPeerCertificates = 4096;

struct RevocationCacheOptions {
  std::string ca_path{};  // the CA bundle the CRLs must be signed by
  std::string crl_dir{};
  std::chrono::milliseconds reread_interval = kDefaultCrlRereadInterval;  // >= 1 ms
  size_t max_cached = kMaxCachedPeerCertificates;                         // >= 1
  std::function<RevocationClock::time_point()> now = RevocationClock::now;
};

class RevocationCache {
 public:
  explicit RevocationCache(RevocationCacheOptions options);

  // OK unless a CRL revokes the certificate `pem`: kUnauthenticated "certificate serial ...
  // ('CN') was revoked ...". kInvalidArgument when `pem` is no certificate.
  [[nodiscard]] Status Check(std::string_view pem);

  // How many times the CRLs were read with a changed listing (0: never).
  [[nodiscard]] uint64_t generation() const;
  [[nodiscard]] size_t TEST_cached() const;
  // Certificates parsed so far (once per cache miss).
  [[nodiscard]] uint64_t TEST_parses() const;

 private:
  // (issuer common name, serial hex) -> the CRL that lists it.
  using RevokedSerials = absl::flat_hash_map<std::string, std::string>;
  struct Decision {
    std::string key{};  // issuer common name + '\0' + serial hex
    std::string common_name{};
    std::string serial_hex{};
    uint64_t generation = 0;
    bool revoked = false;
    std::string crl_path{};  // the CRL that revokes it
  };

  // Lists the directory when the interval has passed, and reads the CRLs when it changed.
  void MaybeReread(RevocationClock::time_point now);
  // `decision` taken again under the current lists.
  void Decide(Decision& decision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] static Status Answer(const Decision& decision);

  const RevocationCacheOptions options_;
  std::atomic<int64_t> next_reread_ns_{0};  // RevocationClock, since its epoch
  absl::Mutex reread_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::string listing_ ABSL_GUARDED_BY(reread_mu_);         // the listing last read
  std::string failed_listing_ ABSL_GUARDED_BY(reread_mu_);  // the listing last logged unreadable
  bool read_once_ ABSL_GUARDED_BY(reread_mu_) = false;
  mutable absl::Mutex mu_;
  std::shared_ptr<const RevokedSerials> revoked_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Decision> cache_ ABSL_GUARDED_BY(mu_);  // by PEM
  uint64_t parses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal::security
