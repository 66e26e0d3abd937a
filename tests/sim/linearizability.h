#pragma once

// A linearizability checker for the histories recorded by the deterministic simulation.
//
// Model: one key of the document store is a register whose state is "absent" or "present with
// value v". Keys are independent (linearizability is compositional, Herlihy & Wing), so a history
// of many keys is checked one key at a time (HistoryRecorder::CheckAll).
//
// Algorithm: Wing & Gong's backtracking search with Lowe's memoization, as in Porcupine. The
// definite ops become a time-ordered list of call and return entries; the search repeatedly
// linearizes a call that precedes the earliest outstanding return, and backtracks when it meets a
// return whose op it could not place. A cache of configurations (ops linearized, register state)
// prunes every one already explored. Unknown-outcome ops (below) are placed in chains between two
// definite ops, shortest chains first, and the cache also prunes a configuration when one with
// the same definite ops and state but a subset of its unknown ops was explored: without that,
// each pending unknown op would double the search. The worst case stays exponential in the
// concurrency, hence the deadline. Verified against a brute-force search in the tests.
//
// Time and ties. Each op occupies the CLOSED interval [call_us, return_us] of simulated time. Op A
// is ordered before op B only if A.return_us < B.call_us strictly; ops whose intervals share any
// instant are concurrent. The simulated clock is coarse and events at one instant have no
// observable order (a reply delivered at t and a request sent at t may be processed either way),
// so ordering them would let the checker report violations that did not happen. The price is
// that a real violation hidden entirely inside one tick goes unseen; a checker must never cry
// wolf, missing a violation only weakens it. In the entry list, calls sort before returns at the
// same instant.
//
// Unknown outcomes (the client timed out or got an ambiguous error) have return_us = +infinity:
// the op may take effect at any point after its call or never. Its effect is still a function of
// the state it meets (an unknown Insert inserts only into an absent key), so every step is legal
// for it; it never needs to be linearized, but the search may place it anywhere after its call.
// An unknown Get is dropped: it constrains nothing.

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::sim {

enum class OpKind : uint8_t {
  kInsert = 0,         // absent -> value; kOk or kDuplicate (present, no change)
  kUpdate = 1,         // present -> value; kOk or kNotFound (absent, no change)
  kUpsert = 2,         // -> value; kOk
  kDelete = 3,         // present -> absent; kOk or kNotFound (absent)
  kGet = 4,            // kOk with read_value (present), or kNotFound (absent)
  kCompareAndSet = 5,  // present `expected` -> value; kOk, or kConditionFailed (no change)
};
[[nodiscard]] std::string_view ToString(OpKind kind);

enum class OpOutcome : uint8_t {
  kOk = 0,
  kDuplicate = 1,
  kNotFound = 2,
  kConditionFailed = 3,
  kUnknown = 4,  // may have taken effect at any point after the call, or never
};
[[nodiscard]] std::string_view ToString(OpOutcome outcome);

// The return time of an op whose outcome is unknown.
inline constexpr int64_t kNeverReturned = std::numeric_limits<int64_t>::max();

// One client operation on one key. Ops that failed definitively without effect are not recorded.
struct Operation {
  uint64_t client = 0;
  OpKind kind = OpKind::kGet;
  std::string value;     // written by kInsert, kUpdate, kUpsert, kCompareAndSet
  std::string expected;  // kCompareAndSet only
  OpOutcome outcome = OpOutcome::kUnknown;
  std::string read_value;  // kGet with kOk only
  int64_t call_us = 0;
  int64_t return_us = kNeverReturned;  // >= call_us; ignored when the outcome is kUnknown
};
// E.g. `c3 CompareAndSet("a" -> "b") = kOk [10, 25]`.
[[nodiscard]] std::string DebugString(const Operation& op);

struct CheckOptions {
  std::optional<std::string> initial_value;  // the register before the history; nullopt = absent
  std::chrono::milliseconds timeout{10000};  // per CheckRegisterHistory call
};

enum class CheckResult : uint8_t {
  kLinearizable = 0,
  kNotLinearizable = 1,
  kTimeout = 2,         // the search hit the deadline; callers count it as a failure
  kInvalidHistory = 3,  // malformed input: return before call, or an outcome the kind cannot have
};
[[nodiscard]] std::string_view ToString(CheckResult result);

struct CheckReport {
  CheckResult result = CheckResult::kLinearizable;
  // Empty when linearizable. For kNotLinearizable: the longest linearizable prefix the search
  // found, the state after it and the ops none of which could be placed next.
  std::string explanation;
  uint64_t states_explored = 0;

  [[nodiscard]] bool ok() const { return result == CheckResult::kLinearizable; }
};

// Checks a history of ONE key (ops in any order). Pure; thread-safe.
[[nodiscard]] CheckReport CheckRegisterHistory(std::span<const Operation> history,
                                               const CheckOptions& options);

// Records the ops of many keys as clients issue them, then checks each key's history.
//
// Thread-safe: every method may be called from any thread. An op begun but never ended when
// CheckAll runs counts as unknown (its client never heard back). Each key starts from
// CheckOptions::initial_value.
class HistoryRecorder {
 public:
  // Names an op between Begin and End; valid for the recorder's lifetime.
  struct Handle {
    size_t index = 0;
  };

  struct KeyFailure {
    std::string key;
    CheckReport report;
  };

  struct Summary {
    size_t keys = 0;
    size_t operations = 0;
    size_t linearizable = 0;
    size_t not_linearizable = 0;
    size_t timed_out = 0;
    size_t invalid = 0;
    std::vector<KeyFailure> failures;  // every key that is not linearizable, in key order

    [[nodiscard]] bool ok() const { return failures.empty(); }
    [[nodiscard]] std::string DebugString() const;
  };

  [[nodiscard]] Handle Begin(std::string key, uint64_t client, OpKind kind, std::string value,
                             std::string expected, int64_t call_us);
  // Each handle is ended at most once (asserted).
  void End(Handle handle, OpOutcome outcome, std::string read_value, int64_t return_us);
  void EndUnknown(Handle handle);

  [[nodiscard]] size_t size() const;
  // Every operation recorded so far, by key, in recording order.
  [[nodiscard]] std::map<std::string, std::vector<Operation>> ByKey() const;
  // Checks every key; the deadline applies to each key separately.
  [[nodiscard]] Summary CheckAll(const CheckOptions& options) const;

 private:
  struct Recorded {
    std::string key;
    Operation op;
    bool ended = false;
  };

  mutable std::mutex mu_;
  std::vector<Recorded> ops_;  // guarded by mu_
};

}  // namespace shoal::sim
