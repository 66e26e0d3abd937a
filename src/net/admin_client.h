#pragma once

// The operator's side of Shoal.Admin: an admin request that rides out a coordinator that dies or
// a leader that changes while it is in flight (docs/design/network.md, "Admin requests across a
// coordinator failover").
//
// A request whose answer did not come (kDeadlineExceeded from GrpcRuntime::AdminAnswer: the
// connection broke or the deadline passed) may have been handled. RepeatOf says what may be done
// about it; AdminWithRepeat does it against whichever coordinator leads by then, until an answer
// tells the true outcome or its patience runs out:
//   - kRepeat: reads (progress, plan) and changes whose outcome is the same however often they
//     are applied (remove-node leaves a leaving node leaving, rebalance, thresholds, failpoints):
//     sent again as they are.
//   - kCheckMap: add-node and remove-node. The map tells whether the lost attempt took effect
//     (the node is a member / leaving or gone); only if it did not is the request sent again.
//     A repeat answered ALREADY_EXISTS (add) or NOT_FOUND (remove) means an earlier attempt took
//     effect meanwhile. A bucket move, split or merge, if it becomes an admin request, belongs
//     here: it is never sent twice blindly.
//   - kNever: a request without a body (refused anyway).
// Once an answer was lost, attempts certainly not handled (kUnavailable: no coordinator
// reachable, or only standbys while one takes over) are repeated too. A first attempt certainly
// not handled is returned as is: nothing changed, which is its true outcome. So is an error the
// coordinator answered (e.g. UNAVAILABLE while ZooKeeper is down: the change was refused).
//
// Thread-safety: stateless functions; AdminWithRepeat is as thread-safe as the runtime.

#include <chrono>
#include <cstdint>
#include <string>

#include "proto/shoal.pb.h"
#include "src/common/status.h"
#include "src/net/grpc_runtime.h"

namespace shoal::net {

enum class AdminRepeat : uint8_t {
  kRepeat,    // the same outcome however often it is applied: send it again
  kCheckMap,  // learn from the map whether it took effect; send it again only if not
  kNever,     // never send it again
};

// The one classification of admin requests (the header's list).
[[nodiscard]] AdminRepeat RepeatOf(const wire::AdminRequest& request);

struct AdminRepeatOptions {
  // Each attempt's deadline.
  transport::Micros call_timeout = 10'000'000;
  // How long to keep trying after the first attempt got no answer: long enough for a standby to
  // take over (the election session, 4 s by default, plus its poll) and for a restarted
  // coordinator to serve.
  std::chrono::milliseconds patience{30'000};
};

struct AdminOutcome {
  wire::AdminResponse response;  // the answer that told the outcome (status OK)
  // Empty when the first attempt was answered; else how the outcome was learned, for the
  // operator: "the first attempt's answer was lost; confirmed by the map", ...
  std::string recovered;
};

// Sends `request` to the leader coordinator and, when no answer comes, repeats it as RepeatOf
// allows for up to options.patience. An OK outcome, or the error that tells the true outcome (an
// answered error, or the last unanswered one once the patience ran out, naming how long it
// tried).
[[nodiscard]] StatusOr<AdminOutcome> AdminWithRepeat(GrpcRuntime& runtime,
                                                     const wire::AdminRequest& request,
                                                     const AdminRepeatOptions& options = {});

}  // namespace shoal::net
