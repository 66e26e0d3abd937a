#include "src/net/call_admission.h"

#include <fmt/format.h>

namespace shoal::net {

struct CallAdmission::Ticket::Slot {
  Slot(CallAdmission* admission, std::string host) : admission(admission), host(std::move(host)) {}
  ~Slot() { admission->Release(host); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  CallAdmission* const admission;
  const std::string host;
};

Status ValidateCallLimits(const CallLimits& limits) {
  if (limits.max_calls == 0 || limits.max_calls_per_address == 0) {
    return InvalidArgumentError(
        "the calls in flight per server and per client address must be "
        "at least 1");
  }
  return OkStatus();
}

std::string_view PeerHost(std::string_view peer) {
  std::string_view rest = peer;
  if (rest.starts_with("ipv4:")) {
    rest.remove_prefix(5);
    const size_t colon = rest.rfind(':');
    return colon == std::string_view::npos ? rest : rest.substr(0, colon);
  }
  if (rest.starts_with("ipv6:")) {
    rest.remove_prefix(5);
    // "[::1]:5000", or "%5B::1%5D:5000" as some gRPC versions escape the brackets.
    const size_t close = rest.rfind(']');
    if (rest.starts_with('[') && close != std::string_view::npos) return rest.substr(1, close - 1);
    const size_t colon = rest.rfind(':');
    return colon == std::string_view::npos ? rest : rest.substr(0, colon);
  }
  return peer;
}

StatusOr<CallAdmission::Ticket> CallAdmission::Admit(std::string_view peer) {
  const std::string_view host = PeerHost(peer);
  absl::MutexLock lock(&mu_);
  if (calls_ >= limits_.max_calls) {
    return ResourceExhaustedError(
        fmt::format("this server already handles {} calls; the limit is {} calls in flight per "
                    "server (docs/limits.md)",
                    calls_, limits_.max_calls));
  }
  auto it = per_host_.find(host);
  if (it == per_host_.end()) it = per_host_.emplace(std::string(host), 0).first;
  if (it->second >= limits_.max_calls_per_address) {
    return ResourceExhaustedError(
        fmt::format("client address {} already has {} calls in flight; the limit is {} per "
                    "client address (docs/limits.md)",
                    host, it->second, limits_.max_calls_per_address));
  }
  ++it->second;
  ++calls_;
  return Ticket(std::make_shared<Ticket::Slot>(this, it->first));
}

void CallAdmission::Release(const std::string& host) {
  absl::MutexLock lock(&mu_);
  --calls_;
  auto it = per_host_.find(host);
  if (it != per_host_.end() && --it->second == 0) per_host_.erase(it);
}

uint32_t CallAdmission::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

uint32_t CallAdmission::calls_from(std::string_view host) const {
  absl::MutexLock lock(&mu_);
  const auto it = per_host_.find(host);
  return it == per_host_.end() ? 0 : it->second;
}

}  // namespace shoal::net
