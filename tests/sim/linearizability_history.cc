// The history model of the linearizability checker (linearizability.h): the names and debug
// strings of operations and results, and the HistoryRecorder that collects a run's operations
// and checks them key by key. The search itself is in linearizability.cc.

#include <fmt/format.h>

#include <cassert>
#include <map>
#include <utility>

#include "tests/sim/linearizability.h"
#include "tests/sim/linearizability_internal.h"

namespace shoal::sim {

using internal::Quoted;

std::string_view ToString(OpKind kind) {
  switch (kind) {
    case OpKind::kInsert:
      return "Insert";
    case OpKind::kUpdate:
      return "Update";
    case OpKind::kUpsert:
      return "Upsert";
    case OpKind::kDelete:
      return "Delete";
    case OpKind::kGet:
      return "Get";
    case OpKind::kCompareAndSet:
      return "CompareAndSet";
  }
  return "?";
}

std::string_view ToString(OpOutcome outcome) {
  switch (outcome) {
    case OpOutcome::kOk:
      return "ok";
    case OpOutcome::kDuplicate:
      return "duplicate";
    case OpOutcome::kNotFound:
      return "not-found";
    case OpOutcome::kConditionFailed:
      return "condition-failed";
    case OpOutcome::kUnknown:
      return "unknown";
  }
  return "?";
}

std::string_view ToString(CheckResult result) {
  switch (result) {
    case CheckResult::kLinearizable:
      return "linearizable";
    case CheckResult::kNotLinearizable:
      return "NOT linearizable";
    case CheckResult::kTimeout:
      return "timeout";
    case CheckResult::kInvalidHistory:
      return "invalid history";
  }
  return "?";
}

std::string DebugString(const Operation& op) {
  std::string args;
  switch (op.kind) {
    case OpKind::kInsert:
    case OpKind::kUpdate:
    case OpKind::kUpsert:
      args = fmt::format("({})", Quoted(op.value));
      break;
    case OpKind::kCompareAndSet:
      args = fmt::format("({} -> {})", Quoted(op.expected), Quoted(op.value));
      break;
    case OpKind::kDelete:
    case OpKind::kGet:
      break;
  }
  std::string result(ToString(op.outcome));
  if (op.kind == OpKind::kGet && op.outcome == OpOutcome::kOk) {
    result += " " + Quoted(op.read_value);
  }
  const std::string end = op.outcome == OpOutcome::kUnknown || op.return_us == kNeverReturned
                              ? std::string("inf)")
                              : fmt::format("{}]", op.return_us);
  return fmt::format("c{} {}{} = {} [{}, {}", op.client, ToString(op.kind), args, result,
                     op.call_us, end);
}

HistoryRecorder::Handle HistoryRecorder::Begin(std::string key, uint64_t client, OpKind kind,
                                               std::string value, std::string expected,
                                               int64_t call_us) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.push_back({.key = std::move(key),
                  .op = {.client = client,
                         .kind = kind,
                         .value = std::move(value),
                         .expected = std::move(expected),
                         .outcome = OpOutcome::kUnknown,
                         .read_value = {},
                         .call_us = call_us,
                         .return_us = kNeverReturned},
                  .ended = false});
  return Handle{.index = ops_.size() - 1};
}

void HistoryRecorder::End(Handle handle, OpOutcome outcome, std::string read_value,
                          int64_t return_us) {
  std::lock_guard<std::mutex> lock(mu_);
  assert(handle.index < ops_.size() && !ops_[handle.index].ended);
  Recorded& recorded = ops_[handle.index];
  recorded.ended = true;
  recorded.op.outcome = outcome;
  recorded.op.read_value = std::move(read_value);
  recorded.op.return_us = outcome == OpOutcome::kUnknown ? kNeverReturned : return_us;
}

void HistoryRecorder::EndUnknown(Handle handle) {
  End(handle, OpOutcome::kUnknown, {}, kNeverReturned);
}

size_t HistoryRecorder::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size();
}

std::map<std::string, std::vector<Operation>> HistoryRecorder::ByKey() const {
  std::map<std::string, std::vector<Operation>> by_key;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Recorded& recorded : ops_) by_key[recorded.key].push_back(recorded.op);
  return by_key;
}

HistoryRecorder::Summary HistoryRecorder::CheckAll(const CheckOptions& options) const {
  // Copied out under the lock; the search itself runs unlocked so recording never waits on it.
  const std::map<std::string, std::vector<Operation>> by_key = ByKey();
  Summary summary;
  for (auto& [key, history] : by_key) {
    ++summary.keys;
    summary.operations += history.size();
    CheckReport report = CheckRegisterHistory(history, options);
    switch (report.result) {
      case CheckResult::kLinearizable:
        ++summary.linearizable;
        continue;
      case CheckResult::kNotLinearizable:
        ++summary.not_linearizable;
        break;
      case CheckResult::kTimeout:
        ++summary.timed_out;
        break;
      case CheckResult::kInvalidHistory:
        ++summary.invalid;
        break;
    }
    summary.failures.push_back({.key = key, .report = std::move(report)});
  }
  return summary;
}

std::string HistoryRecorder::Summary::DebugString() const {
  std::string out = fmt::format(
      "{} keys, {} ops: {} linearizable, {} not linearizable, {} timed out, {} invalid\n", keys,
      operations, linearizable, not_linearizable, timed_out, invalid);
  for (const KeyFailure& failure : failures) {
    out += fmt::format("key {}: {}\n{}", Quoted(failure.key), ToString(failure.report.result),
                       failure.report.explanation);
    if (!failure.report.explanation.empty() && failure.report.explanation.back() != '\n') {
      out += '\n';
    }
  }
  return out;
}

}  // namespace shoal::sim
