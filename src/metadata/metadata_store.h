#pragma once

// MetadataStore: the small, strongly consistent key-value store the coordinator keeps the cluster
// metadata in (the shard map, move logs, membership). Modelled on ZooKeeper: every key carries a
// version, writes are compare-and-set on it, several writes commit atomically (multi), prefixes
// can be watched, and sessions own ephemeral keys that vanish when the session ends.
//
// Keys are byte strings ordered bytewise; there is no hierarchy, "directories" are prefixes.
// Limits (checked on every call that takes them):
//   - a key is 1 to kMaxKeyBytes bytes: InvalidArgument otherwise;
//   - a value is at most kMaxValueBytes bytes (ZooKeeper's znode limit): ResourceExhausted;
//   - a Commit holds at most kMaxCommitOps operations: ResourceExhausted.
//
// Implementations are thread-safe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"
#include "src/common/strong_id.h"

namespace shoal::metadata {

inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kMaxValueBytes = 1024 * 1024;
inline constexpr size_t kMaxCommitOps = 1000;

// A stored value and its version: 1 when the key is created, +1 on every write of the key (like
// ZooKeeper's znode version). Deleting and re-creating a key starts again at 1.
struct Versioned {
  std::string value;
  uint64_t version = 0;
  friend bool operator==(const Versioned&, const Versioned&) = default;
};

// Special expected versions.
inline constexpr uint64_t kMustNotExist = 0;           // create only: the key must be absent
inline constexpr uint64_t kAnyVersion = ~uint64_t{0};  // unconditional

struct SessionIdTag {
  static constexpr const char* kPrefix = "s";
};
struct WatchIdTag {
  static constexpr const char* kPrefix = "w";
};
// A session owning ephemeral keys; ids are unique within one store object.
using SessionId = StrongId<SessionIdTag, uint64_t>;
// A registered watch.
using WatchId = StrongId<WatchIdTag, uint64_t>;

// One operation of a Commit. kPut writes `value` to `key`; kDelete removes `key` (NotFound
// rules as Delete); kCheck changes nothing and only requires `expected_version`. Each operation
// sees the effects of the ones before it in the same Commit.
struct MetaOp {
  enum class Kind : uint8_t { kPut, kDelete, kCheck };
  Kind kind = Kind::kCheck;
  std::string key;
  std::string value;  // kPut only
  uint64_t expected_version = kAnyVersion;

  [[nodiscard]] static MetaOp Put(std::string key, std::string value,
                                  uint64_t expected_version = kAnyVersion) {
    return {Kind::kPut, std::move(key), std::move(value), expected_version};
  }
  [[nodiscard]] static MetaOp Delete(std::string key, uint64_t expected_version = kAnyVersion) {
    return {Kind::kDelete, std::move(key), {}, expected_version};
  }
  [[nodiscard]] static MetaOp Check(std::string key, uint64_t expected_version) {
    return {Kind::kCheck, std::move(key), {}, expected_version};
  }
};

// A change of a watched key: its new value and version, or nullopt when it was deleted or its
// session ended.
struct WatchEvent {
  std::string key;
  std::optional<Versioned> value;
  friend bool operator==(const WatchEvent&, const WatchEvent&) = default;
};

class MetadataStore {
 public:
  virtual ~MetadataStore() = default;

  // The value and version of `key`; NotFound if absent.
  [[nodiscard]] virtual StatusOr<Versioned> Get(std::string_view key) const = 0;

  // Writes iff the stored version equals `expected_version` (kMustNotExist: the key is absent;
  // kAnyVersion: always) and returns the new version. FailedPrecondition on a mismatch (the
  // message names the key and both versions) and for an ephemeral key (write those with
  // PutEphemeral).
  [[nodiscard]] virtual StatusOr<uint64_t> Put(std::string_view key, std::string_view value,
                                               uint64_t expected_version) = 0;

  // Removes `key` iff its version equals `expected_version`. NotFound if absent, unless
  // `expected_version` is kAnyVersion (then OK). Ephemeral keys may be deleted too.
  [[nodiscard]] virtual Status Delete(std::string_view key, uint64_t expected_version) = 0;

  // All-or-nothing multi-key transaction (ZooKeeper multi): if every operation's expected
  // version holds, all apply atomically and durably; otherwise nothing changes and
  // FailedPrecondition names the index of the first failing operation (a key or value beyond
  // the limits keeps its own code, also named by index).
  [[nodiscard]] virtual Status Commit(std::span<const MetaOp> ops) = 0;

  // The keys starting with `prefix` (ephemeral ones included), sorted bytewise.
  [[nodiscard]] virtual StatusOr<std::vector<std::pair<std::string, Versioned>>> List(
      std::string_view prefix) const = 0;

  // Calls `fn` after every committed change of a key starting with `prefix` (writes, deletes,
  // session ends), once the change is durable, outside the store's locks, on the thread that made
  // the change, and in commit order across all threads (so callbacks never run concurrently).
  // Persistent until Unwatch. `fn` may call back into the store (the events of such nested
  // changes are delivered after `fn` returns); it must not block on another thread that uses the
  // store.
  [[nodiscard]] virtual WatchId Watch(std::string prefix,
                                      std::function<void(const WatchEvent&)> fn) = 0;
  // After Unwatch returns, the callback is not running (unless Unwatch was called from it) and is
  // never called again. Unknown ids are ignored.
  virtual void Unwatch(WatchId id) = 0;

  // Sessions (ZooKeeper's): keys put with a session vanish, with a watch event, when it is closed
  // or expires (no OpenSession/KeepAlive within `ttl`, judged by the store's clock). Ephemeral
  // keys are not durable: a reopened store has none. InvalidArgument unless ttl > 0.
  [[nodiscard]] virtual StatusOr<SessionId> OpenSession(std::chrono::milliseconds ttl) = 0;
  // Restarts the session's ttl; NotFound if it expired or was closed.
  [[nodiscard]] virtual Status KeepAlive(SessionId session) = 0;
  // Ends the session and deletes its keys; NotFound if it expired or was closed.
  [[nodiscard]] virtual Status CloseSession(SessionId session) = 0;
  // Put for a key owned by `session`. NotFound if the session is gone; FailedPrecondition on a
  // version mismatch, if the key is persistent, or if another session owns it.
  [[nodiscard]] virtual StatusOr<uint64_t> PutEphemeral(SessionId session, std::string_view key,
                                                        std::string_view value,
                                                        uint64_t expected_version) = 0;

  // Expires the sessions whose ttl has passed. Implementations may also do this lazily.
  virtual void ExpireSessions() = 0;
};

}  // namespace shoal::metadata
