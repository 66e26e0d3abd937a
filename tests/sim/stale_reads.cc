#include "tests/sim/stale_reads.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace shoal::sim {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr int64_t kBeforeAll = std::numeric_limits<int64_t>::min();

// Whether `op` may have changed the register: a write that succeeded, or whose outcome is unknown.
bool MayHaveWritten(const Operation& op) {
  if (op.kind == OpKind::kGet) return false;
  return op.outcome == OpOutcome::kOk || op.outcome == OpOutcome::kUnknown;
}

int64_t EndOf(const Operation& op) { return op.outcome == OpOutcome::kOk ? op.return_us : kNever; }

std::string Describe(const BoundedRead& read) {
  return fmt::format("read of {} at [{}, {}] = {}", read.key, read.call_us, read.return_us,
                     read.value.value_or("absent"));
}

}  // namespace

std::optional<std::string> CheckBoundedReads(
    const std::map<std::string, std::vector<Operation>>& history,
    const std::vector<BoundedRead>& reads, int64_t bound_us) {
  static const std::vector<Operation> kNone;
  for (const BoundedRead& read : reads) {
    auto it = history.find(read.key);
    const std::vector<Operation>& ops = it == history.end() ? kNone : it->second;
    // The source of what the read returned, by its end (the latest-ending candidate).
    std::optional<int64_t> source_end;
    if (!read.value.has_value()) source_end = kBeforeAll;  // the initial absence
    for (const Operation& op : ops) {
      if (!MayHaveWritten(op)) continue;
      const bool produces = read.value.has_value()
                                ? op.kind != OpKind::kDelete && op.value == *read.value
                                : op.kind == OpKind::kDelete;
      if (produces) source_end = std::max(source_end.value_or(kBeforeAll), EndOf(op));
    }
    if (!source_end.has_value()) {
      return fmt::format("{}: no write that succeeded or may have written it", Describe(read));
    }
    for (const Operation& op : ops) {
      if (op.kind == OpKind::kGet || op.outcome != OpOutcome::kOk) continue;
      if (op.return_us < read.call_us - bound_us && *source_end < op.call_us) {
        return fmt::format("{}: stale beyond {} us, it missed {}", Describe(read), bound_us,
                           DebugString(op));
      }
    }
  }
  return std::nullopt;
}

}  // namespace shoal::sim
