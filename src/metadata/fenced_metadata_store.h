#pragma once

// FencedMetadataStore: the view of a MetadataStore a leader writes through. Every write (Put,
// Delete, Commit) is one Commit that starts with the leader's fence (LeaderElection::Fence(): a
// Check of the election's epoch key at the leader's epoch). Once another candidate took over
// (bumping the epoch), every write of the stale leader fails with FailedPrecondition and changes
// nothing; reads, watches and sessions pass through unfenced.
//
// Invariant: at most one leader's writes succeed at any epoch, and none of an older epoch succeed
// after a newer leader's first write (its epoch bump precedes its writes).
//
// Put with kAnyVersion reads the key's version first and pins the write to it (a fenced write
// must be a Commit, which does not return versions); the key is the leader's alone, so the read
// cannot race another writer of it. A Commit holds at most kMaxCommitOps - 1 operations (the
// fence is one more): ResourceExhausted otherwise. Thread-safe like the stores it wraps.

#include <functional>

#include "src/metadata/metadata_store.h"

namespace shoal::metadata {

class FencedMetadataStore final : public MetadataStore {
 public:
  // `fence`: the check to prepend (called per write, so it follows the election's state).
  FencedMetadataStore(MetadataStore& store, std::function<MetaOp()> fence)
      : store_(store), fence_(std::move(fence)) {}

  [[nodiscard]] StatusOr<Versioned> Get(std::string_view key) const override {
    return store_.Get(key);
  }
  [[nodiscard]] StatusOr<uint64_t> Put(std::string_view key, std::string_view value,
                                       uint64_t expected_version) override;
  [[nodiscard]] Status Delete(std::string_view key, uint64_t expected_version) override;
  [[nodiscard]] Status Commit(std::span<const MetaOp> ops) override;
  [[nodiscard]] StatusOr<std::vector<std::pair<std::string, Versioned>>> List(
      std::string_view prefix) const override {
    return store_.List(prefix);
  }
  [[nodiscard]] WatchId Watch(std::string prefix,
                              std::function<void(const WatchEvent&)> fn) override {
    return store_.Watch(std::move(prefix), std::move(fn));
  }
  void Unwatch(WatchId id) override { store_.Unwatch(id); }
  [[nodiscard]] StatusOr<SessionId> OpenSession(std::chrono::milliseconds ttl) override {
    return store_.OpenSession(ttl);
  }
  [[nodiscard]] Status KeepAlive(SessionId session) override { return store_.KeepAlive(session); }
  [[nodiscard]] Status CloseSession(SessionId session) override {
    return store_.CloseSession(session);
  }
  [[nodiscard]] StatusOr<uint64_t> PutEphemeral(SessionId session, std::string_view key,
                                                std::string_view value,
                                                uint64_t expected_version) override {
    return store_.PutEphemeral(session, key, value, expected_version);
  }
  void ExpireSessions() override { store_.ExpireSessions(); }

 private:
  MetadataStore& store_;
  const std::function<MetaOp()> fence_;
};

}  // namespace shoal::metadata
