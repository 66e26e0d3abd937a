#pragma once

// LeaderElection: one leader among candidates (e.g. several coordinators) that share a
// MetadataStore, with an epoch that fences a stale leader. Keys under `prefix`:
//   <prefix>leader   ephemeral, owned by the leader's session: "<epoch> <candidate name>";
//   <prefix>epoch    persistent; its version is the epoch of the latest leader.
// A candidate becomes leader by creating the leader key (kMustNotExist) in its own session, then
// bumping the epoch key; only the holder of the leader key bumps it, so epochs grow by one per
// leadership. The leader adds Fence() to every Commit: once a newer leader took over (the old one's
// session ended while it was paused or cut off), the old leader's commits fail with
// FailedPrecondition instead of overwriting the newer leader's state. A standby polls TryAcquire
// (or watches <prefix>leader) and takes over when the key vanishes.
//
// Thread-safe for concurrent calls on one object (a mutex guards the state).

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "src/metadata/metadata_store.h"

namespace shoal::metadata {

class LeaderElection {
 public:
  // `ttl`: of the candidate's session; a leader that stops renewing it loses leadership.
  LeaderElection(MetadataStore& store, std::string prefix, std::string candidate,
                 std::chrono::milliseconds ttl);
  // Resigns (closes the session) if still leader.
  ~LeaderElection();

  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Tries once to become leader: true if this candidate is (now or already) the leader, false if
  // another candidate is. Errors of the store pass through.
  [[nodiscard]] StatusOr<bool> TryAcquire();
  // The epoch of this candidate's leadership, if it acquired one (and did not resign).
  [[nodiscard]] std::optional<uint64_t> epoch() const;
  // The session holding the leader key, if any.
  [[nodiscard]] std::optional<SessionId> session() const;
  // The check every commit of the leader carries; a Check that always fails if not leader.
  [[nodiscard]] MetaOp Fence() const;
  // Keeps the leader's session alive; NotFound once it ended (leadership is lost).
  [[nodiscard]] Status KeepAlive();
  // Ends the leadership (closes the session: the leader key vanishes).
  void Resign();

  // The current leader as stored: its epoch and name; nullopt if there is none.
  [[nodiscard]] static StatusOr<std::optional<std::pair<uint64_t, std::string>>> Leader(
      const MetadataStore& store, std::string_view prefix);

 private:
  MetadataStore& store_;
  const std::string prefix_;
  const std::string candidate_;
  const std::chrono::milliseconds ttl_;

  mutable std::mutex mu_;
  std::optional<SessionId> session_;  // guarded by mu_
  std::optional<uint64_t> epoch_;     // guarded by mu_
};

}  // namespace shoal::metadata
