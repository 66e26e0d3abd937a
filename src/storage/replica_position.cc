#include "src/storage/replica_position.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/common/point.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

std::string BucketKey(char prefix, BucketId bucket) {
  std::string key(1, prefix);
  AppendBigEndian32(bucket.value(), &key);
  return key;
}

constexpr size_t kMaxHistory = 1u << 20;  // far above any bucket's terms

}  // namespace

std::string ReplicaPosition::DebugString() const {
  return fmt::format("({}, {})", term.DebugString(), rseq);
}

Term ReplicaState::TermOf(uint64_t rseq) const {
  Term term(0);
  for (const TermStart& start : history) {
    if (start.first_rseq > rseq) break;
    term = start.term;
  }
  return term;
}

bool IsPrefixOf(const ReplicaState& copy, const ReplicaState& primary) {
  const uint64_t x = copy.position.rseq;
  if (x == 0 || x > primary.position.rseq) return false;
  if (copy.TermOf(x) != copy.position.term) return false;
  // Both TermOf functions are steps that change only where a term starts: equal at rseq 1 and
  // at every start up to x, they are equal on 1..x.
  const auto same_at = [&](uint64_t rseq) {
    const Term term = copy.TermOf(rseq);
    return term != Term(0) && term == primary.TermOf(rseq);
  };
  if (!same_at(1)) return false;
  for (const ReplicaState* state : {&copy, &primary}) {
    for (const TermStart& start : state->history) {
      if (start.first_rseq >= 1 && start.first_rseq <= x && !same_at(start.first_rseq)) {
        return false;
      }
    }
  }
  return true;
}

Status ReplicaState::CheckInvariants() const {
  for (size_t i = 1; i < history.size(); ++i) {
    if (history[i].term <= history[i - 1].term ||
        history[i].first_rseq < history[i - 1].first_rseq) {
      return InternalError(fmt::format("term history out of order: {}", DebugString()));
    }
  }
  if (position.rseq > 0 && position.term > current_term()) {
    return InternalError(fmt::format("position beyond the history: {}", DebugString()));
  }
  return OkStatus();
}

std::string ReplicaState::DebugString() const {
  std::vector<std::string> terms;
  for (const TermStart& start : history) {
    terms.push_back(fmt::format("{}@{}", start.term.DebugString(), start.first_rseq));
  }
  return fmt::format("{} history=[{}]", position.DebugString(), fmt::join(terms, ","));
}

std::string ReplicaPositionKey(BucketId bucket) {
  return BucketKey(kReplicaPositionPrefix, bucket);
}

std::string TermHistoryKey(BucketId bucket) { return BucketKey(kTermHistoryPrefix, bucket); }

std::string SealKey(BucketId bucket) { return BucketKey(kSealPrefix, bucket); }

std::string EncodeReplicaPosition(const ReplicaPosition& position) {
  std::string out;
  AppendBigEndian64(position.term.value(), &out);
  AppendBigEndian64(position.rseq, &out);
  return out;
}

StatusOr<ReplicaPosition> DecodeReplicaPosition(std::string_view bytes) {
  if (bytes.size() != 16) return StorageError(ErrorReason::kCorruption, "bad replica position");
  return ReplicaPosition{.term = Term(DecodeBigEndian64(bytes.data())),
                         .rseq = DecodeBigEndian64(bytes.data() + 8)};
}

std::string EncodeTermHistory(const std::vector<TermStart>& history) {
  std::string out;
  AppendBigEndian32(static_cast<uint32_t>(history.size()), &out);
  for (const TermStart& start : history) {
    AppendBigEndian64(start.term.value(), &out);
    AppendBigEndian64(start.first_rseq, &out);
  }
  return out;
}

StatusOr<std::vector<TermStart>> DecodeTermHistory(std::string_view bytes) {
  if (bytes.size() < 4) return StorageError(ErrorReason::kCorruption, "bad term history");
  const uint32_t count = DecodeBigEndian32(bytes.data());
  if (count > kMaxHistory || bytes.size() != 4 + size_t{count} * 16) {
    return StorageError(ErrorReason::kCorruption, "bad term history length");
  }
  std::vector<TermStart> history;
  history.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* at = bytes.data() + 4 + size_t{i} * 16;
    history.push_back(
        {.term = Term(DecodeBigEndian64(at)), .first_rseq = DecodeBigEndian64(at + 8)});
  }
  ReplicaState state{.position = {}, .history = history};
  if (!state.CheckInvariants().ok()) {
    return StorageError(ErrorReason::kCorruption, "term history out of order");
  }
  return history;
}

}  // namespace shoal::storage
