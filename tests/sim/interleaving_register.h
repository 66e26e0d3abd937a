#pragma once

// The single-key register model both interleaving harnesses check outcomes against
// (interleaving_explorer.h; docs/design/interleavings.md, "The check"): what a client saw of each
// operation, and whether some serial order of the operations on a register explains it and the
// final state.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "src/client/client.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "tests/sim/interleaving_explorer.h"

namespace shoal::sim {

// The key every harness operates on.
inline constexpr char kInterleaveKey[] = "k";

// The result of one operation. kNotApplied: an error that means the operation certainly had no
// effect; kUnknown: it may or may not have had one.
struct OpResult {
  enum class Kind : uint8_t { kOk, kDuplicate, kNotFound, kNotApplied, kUnknown };
  Kind kind = Kind::kNotApplied;
  std::string value;  // Get: the body; Query: the bodies returned, joined by '|'
  std::string detail;

  [[nodiscard]] std::string DebugString() const;
};

[[nodiscard]] OpResult ResultOf(const Status& status);

// The register the serial orders run on.
struct Register {
  bool live = false;
  std::string value;
};

// The register `scenario` starts from: absent, live with the initial value, or deleted.
[[nodiscard]] Register InitialRegister(Scenario scenario);
// Writes the key's state for `scenario` through `admin`: nothing (absent), the initial value
// (live), or the initial value and then a delete (deleted: a tombstone).
[[nodiscard]] Status WriteInitialState(client::Client& admin, CollectionId collection,
                                       Scenario scenario);

// What `op` (writing `value`) returns on `r`, which it updates.
[[nodiscard]] OpResult Expect(OpType op, const std::string& value, Register& r);

// Get and Query of the key through `client`.
[[nodiscard]] OpResult GetOne(client::Client& client, CollectionId collection);
[[nodiscard]] OpResult QueryAll(client::Client& client, CollectionId collection);

// One operation of a run: its type, the value it writes, and what its client saw.
struct ObservedOp {
  OpType op = OpType::kGet;
  std::string value;
  OpResult result;
};

// True iff some serial order of `ops` (leaving out those that certainly did not apply, and
// optionally those whose outcome is unknown), started from `initial`, gives the observed results
// and then the final Get and Query. At most 3 operations.
[[nodiscard]] bool MatchesSerialOrder(std::span<const ObservedOp> ops, const Register& initial,
                                      const OpResult& final_get, const OpResult& final_query);

}  // namespace shoal::sim
