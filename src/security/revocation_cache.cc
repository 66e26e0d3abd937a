#include "src/security/revocation_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "src/common/log.h"
#include "src/security/certificates.h"
#include "src/security/revocation.h"

namespace shoal::security {
namespace {

std::string SerialKey(std::string_view issuer_common_name, std::string_view serial_hex) {
  std::string key(issuer_common_name);
  key += '\0';
  key += serial_hex;
  return key;
}

// The names, sizes and modification times of the files of `dir`, sorted; "" when it is missing
// or empty.
std::string Listing(const std::string& dir) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code stat_ec;
    const auto size = it->file_size(stat_ec);
    const auto modified = it->last_write_time(stat_ec);
    entries.push_back(fmt::format("{}:{}:{}", it->path().filename().string(), stat_ec ? 0 : size,
                                  stat_ec ? 0 : modified.time_since_epoch().count()));
  }
  std::sort(entries.begin(), entries.end());
  std::string listing;
  for (const auto& entry : entries) {
    listing += entry;
    listing += '\n';
  }
  return listing;
}

// The cache's key type (abseil's string_view, which need not be std::string_view).
absl::string_view KeyOf(std::string_view pem) { return absl::string_view(pem.data(), pem.size()); }

int64_t Nanos(RevocationClock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

}  // namespace

RevocationCache::RevocationCache(RevocationCacheOptions options)
    : options_(std::move(options)), revoked_(std::make_shared<const RevokedSerials>()) {}

Status RevocationCache::Check(std::string_view pem) {
  const auto now = options_.now();
  if (Nanos(now) >= next_reread_ns_.load(std::memory_order_relaxed)) MaybeReread(now);
  {
    absl::ReaderMutexLock lock(&mu_);
    const auto it = cache_.find(KeyOf(pem));
    if (it != cache_.end() && it->second.generation == generation_) return Answer(it->second);
  }
  Decision decision;
  bool parsed = false;
  {
    absl::MutexLock lock(&mu_);
    if (const auto it = cache_.find(KeyOf(pem)); it != cache_.end()) decision = it->second;
  }
  if (decision.key.empty()) {
    // A miss: parsed outside the lock, so that other calls go on meanwhile.
    SHOAL_ASSIGN_OR_RETURN(CertificateInfo info, ParseCertificate(pem));
    decision.key = SerialKey(info.issuer_common_name, info.serial_hex);
    decision.common_name = std::move(info.common_name);
    decision.serial_hex = std::move(info.serial_hex);
    parsed = true;
  }
  bool newly_revoked = false;
  {
    absl::MutexLock lock(&mu_);
    if (parsed) ++parses_;
    const bool was_revoked = decision.revoked;
    Decide(decision);
    newly_revoked = decision.revoked && (parsed || !was_revoked);
    if (!cache_.contains(KeyOf(pem)) && cache_.size() >= options_.max_cached) cache_.clear();
    cache_.insert_or_assign(std::string(pem), decision);
  }
  if (newly_revoked) {
    // Once per certificate and generation: the operator sees that a revoked holder still tries.
    log::Warning("tls.revoked_peer", {{"serial", decision.serial_hex},
                                      {"common_name", decision.common_name},
                                      {"crl", decision.crl_path}});
  }
  return Answer(decision);
}

void RevocationCache::Decide(Decision& decision) {
  decision.generation = generation_;
  const auto it = revoked_->find(decision.key);
  decision.revoked = it != revoked_->end();
  decision.crl_path = decision.revoked ? it->second : std::string();
}

Status RevocationCache::Answer(const Decision& decision) {
  if (!decision.revoked) return OkStatus();
  return UnauthenticatedError(
      fmt::format("certificate serial {} ('{}') was revoked by the CRL {}: every call over a "
                  "connection that presents it is refused; its holder needs a new certificate "
                  "(docs/security.md)",
                  decision.serial_hex, decision.common_name, decision.crl_path));
}

void RevocationCache::MaybeReread(RevocationClock::time_point now) {
  // One thread reads; the others go on with the lists read before.
  if (!reread_mu_.TryLock()) return;
  if (Nanos(now) < next_reread_ns_.load(std::memory_order_relaxed)) {
    reread_mu_.Unlock();
    return;
  }
  next_reread_ns_.store(Nanos(now + options_.reread_interval), std::memory_order_relaxed);
  std::string listing = Listing(options_.crl_dir);
  if (read_once_ && listing == listing_) {
    reread_mu_.Unlock();
    return;
  }
  StatusOr<std::vector<RevocationList>> lists =
      ReadRevocationLists(options_.ca_path, options_.crl_dir);
  if (!lists.ok()) {
    if (listing != failed_listing_) {
      log::Warning("tls.crl_unreadable",
                   {{"crl_dir", options_.crl_dir}, {"error", MessageOf(lists.status())}});
      failed_listing_ = std::move(listing);
    }
    reread_mu_.Unlock();
    return;
  }
  auto revoked = std::make_shared<RevokedSerials>();
  for (const RevocationList& list : *lists) {
    for (const RevokedSerial& serial : list.revoked) {
      revoked->emplace(SerialKey(list.issuer_common_name, serial.serial_hex), list.path);
    }
  }
  listing_ = std::move(listing);
  read_once_ = true;
  {
    absl::MutexLock lock(&mu_);
    revoked_ = std::move(revoked);
    ++generation_;
  }
  reread_mu_.Unlock();
}

uint64_t RevocationCache::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

size_t RevocationCache::TEST_cached() const {
  absl::MutexLock lock(&mu_);
  return cache_.size();
}

uint64_t RevocationCache::TEST_parses() const {
  absl::MutexLock lock(&mu_);
  return parses_;
}

}  // namespace shoal::security
