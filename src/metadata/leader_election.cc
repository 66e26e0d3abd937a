#include "src/metadata/leader_election.h"

#include <fmt/format.h>

#include <charconv>

namespace shoal::metadata {

LeaderElection::LeaderElection(MetadataStore& store, std::string prefix, std::string candidate,
                               std::chrono::milliseconds ttl)
    : store_(store), prefix_(std::move(prefix)), candidate_(std::move(candidate)), ttl_(ttl) {}

LeaderElection::~LeaderElection() { Resign(); }

StatusOr<bool> LeaderElection::TryAcquire() {
  std::lock_guard lock(mu_);
  if (session_.has_value() && epoch_.has_value()) {
    if (store_.KeepAlive(*session_).ok()) return true;
    session_.reset();  // the session ended: leadership is lost, try again from scratch
    epoch_.reset();
  }
  if (!session_.has_value()) {
    SHOAL_ASSIGN_OR_RETURN(const SessionId session, store_.OpenSession(ttl_));
    session_ = session;
  }
  const std::string leader_key = prefix_ + "leader";
  // The lock: whoever creates the leader key is the leader. The epoch is written into it next.
  auto created = store_.PutEphemeral(*session_, leader_key, "0 " + candidate_, kMustNotExist);
  if (!created.ok()) {
    if (created.status().code() == StatusCode::kFailedPrecondition) return false;
    return created.status();
  }
  // Only the holder of the leader key gets here, so this compare-and-set never races another
  // live leader; it can fail only on a store error.
  uint64_t epoch = 0;
  for (int attempt = 0; attempt < 10 && epoch == 0; ++attempt) {
    auto current = store_.Get(prefix_ + "epoch");
    uint64_t expected = kMustNotExist;
    if (current.ok()) {
      expected = current->version;
    } else if (current.status().code() != StatusCode::kNotFound) {
      return current.status();
    }
    auto bumped = store_.Put(prefix_ + "epoch", candidate_, expected);
    if (bumped.ok()) {
      epoch = *bumped;
    } else if (bumped.status().code() != StatusCode::kFailedPrecondition) {
      return bumped.status();
    }
  }
  if (epoch == 0) return AbortedError("leader election: the epoch key kept changing");
  SHOAL_RETURN_IF_ERROR(
      store_.PutEphemeral(*session_, leader_key, fmt::format("{} {}", epoch, candidate_), 1)
          .status());
  epoch_ = epoch;
  return true;
}

std::optional<uint64_t> LeaderElection::epoch() const {
  std::lock_guard lock(mu_);
  return epoch_;
}

std::optional<SessionId> LeaderElection::session() const {
  std::lock_guard lock(mu_);
  return session_;
}

MetaOp LeaderElection::Fence() const {
  std::lock_guard lock(mu_);
  // Not leader: a version no key reaches, so the fenced commit fails.
  return MetaOp::Check(prefix_ + "epoch", epoch_.value_or(kAnyVersion - 1));
}

Status LeaderElection::KeepAlive() {
  std::lock_guard lock(mu_);
  if (!session_.has_value() || !epoch_.has_value()) {
    return NotFoundError("leader election: not the leader");
  }
  return store_.KeepAlive(*session_);
}

void LeaderElection::Resign() {
  std::lock_guard lock(mu_);
  if (session_.has_value()) (void)store_.CloseSession(*session_);
  session_.reset();
  epoch_.reset();
}

StatusOr<std::optional<std::pair<uint64_t, std::string>>> LeaderElection::Leader(
    const MetadataStore& store, std::string_view prefix) {
  auto current = store.Get(std::string(prefix) + "leader");
  if (!current.ok()) {
    if (current.status().code() == StatusCode::kNotFound) {
      return std::optional<std::pair<uint64_t, std::string>>();
    }
    return current.status();
  }
  const std::string& value = current->value;
  const size_t space = value.find(' ');
  uint64_t epoch = 0;
  if (space == std::string::npos ||
      std::from_chars(value.data(), value.data() + space, epoch).ec != std::errc()) {
    return IoError(fmt::format("leader election: corrupt leader record {:?}", value));
  }
  return std::optional<std::pair<uint64_t, std::string>>(
      std::pair<uint64_t, std::string>(epoch, value.substr(space + 1)));
}

}  // namespace shoal::metadata
