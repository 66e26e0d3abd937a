#pragma once

// CallAdmission: how many calls (unary Shoal.Call, Shoal.Admin and Shoal.Resolve requests, and
// calls on a Shoal.Pipe stream) one server holds at once, in all and per client address
// (docs/limits.md). A call over either bound is refused at once with kResourceExhausted naming the
// bound, before its request is decoded; nothing waits in a queue. Addresses are compared by host
// (IPv4 or IPv6, without the port), so every connection and every process of one machine shares its
// host's bound; cluster processes count too.
//
// Thread-safety: every method is thread-safe; a Ticket may be released on any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"

namespace shoal::net {

inline constexpr uint32_t kDefaultMaxCalls = 4096;
inline constexpr uint32_t kDefaultMaxCallsPerAddress = 1024;

struct CallLimits {
  uint32_t max_calls = kDefaultMaxCalls;                        // in flight on the server, >= 1
  uint32_t max_calls_per_address = kDefaultMaxCallsPerAddress;  // per client host, >= 1
};

// kInvalidArgument for a zero bound.
[[nodiscard]] Status ValidateCallLimits(const CallLimits& limits);

// The host of a gRPC peer string ("ipv4:127.0.0.1:5000" -> "127.0.0.1", "ipv6:[::1]:5000" ->
// "::1"); anything else (a Unix socket, an unknown form) is its own host.
[[nodiscard]] std::string_view PeerHost(std::string_view peer);

class CallAdmission {
 public:
  // One admitted call; its slots are given back when the last copy is destroyed.
  class Ticket {
   public:
    Ticket() = default;

   private:
    friend class CallAdmission;
    struct Slot;
    explicit Ticket(std::shared_ptr<Slot> slot) : slot_(std::move(slot)) {}
    std::shared_ptr<Slot> slot_;
  };

  explicit CallAdmission(CallLimits limits) : limits_(limits) {}
  CallAdmission(const CallAdmission&) = delete;
  CallAdmission& operator=(const CallAdmission&) = delete;

  // A ticket for one more call from `peer` (ServerContext::peer()), or kResourceExhausted.
  [[nodiscard]] StatusOr<Ticket> Admit(std::string_view peer);

  // Calls in flight, in all and from `host`.
  [[nodiscard]] uint32_t calls() const;
  [[nodiscard]] uint32_t calls_from(std::string_view host) const;

 private:
  void Release(const std::string& host);

  const CallLimits limits_;
  mutable absl::Mutex mu_;
  uint32_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint32_t, std::less<>> per_host_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::net
