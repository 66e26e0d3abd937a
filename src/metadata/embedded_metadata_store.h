#pragma once

// EmbeddedMetadataStore: a MetadataStore in this process, durable on local disk in one RocksDB
// database (WAL on, every write synced when `sync`). Each persistent key is one RocksDB entry
// whose value is the 8-byte little-endian version followed by the value, so a Commit is one
// WriteBatch. Sessions and ephemeral keys live only in memory.
//
// Thread-safe: one mutex guards the state; watch callbacks run without it, ordered by a ticket
// taken at commit (see Deliver in the .cc). Sessions are expired lazily at the start of every
// data call and by ExpireSessions.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/metadata/metadata_store.h"

namespace rocksdb {
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace shoal::metadata {

struct EmbeddedMetadataOptions {
  std::string path;  // the RocksDB directory; created if missing
  bool sync = true;  // fsync the WAL on every write
  // Microseconds of a monotonic clock, for session expiry; defaults to std::chrono::steady_clock.
  std::function<int64_t()> now_micros;
};

class EmbeddedMetadataStore final : public MetadataStore {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<EmbeddedMetadataStore>> Open(
      const EmbeddedMetadataOptions& options);
  ~EmbeddedMetadataStore() override;

  EmbeddedMetadataStore(const EmbeddedMetadataStore&) = delete;
  EmbeddedMetadataStore& operator=(const EmbeddedMetadataStore&) = delete;

  [[nodiscard]] StatusOr<Versioned> Get(std::string_view key) const override;
  [[nodiscard]] StatusOr<uint64_t> Put(std::string_view key, std::string_view value,
                                       uint64_t expected_version) override;
  [[nodiscard]] Status Delete(std::string_view key, uint64_t expected_version) override;
  [[nodiscard]] Status Commit(std::span<const MetaOp> ops) override;
  [[nodiscard]] StatusOr<std::vector<std::pair<std::string, Versioned>>> List(
      std::string_view prefix) const override;
  [[nodiscard]] WatchId Watch(std::string prefix,
                              std::function<void(const WatchEvent&)> fn) override;
  void Unwatch(WatchId id) override;
  [[nodiscard]] StatusOr<SessionId> OpenSession(std::chrono::milliseconds ttl) override;
  [[nodiscard]] Status KeepAlive(SessionId session) override;
  [[nodiscard]] Status CloseSession(SessionId session) override;
  [[nodiscard]] StatusOr<uint64_t> PutEphemeral(SessionId session, std::string_view key,
                                                std::string_view value,
                                                uint64_t expected_version) override;
  void ExpireSessions() override;

 private:
  struct Ephemeral {
    std::string value;
    uint64_t version = 0;
    SessionId owner;
  };
  struct Session {
    int64_t ttl_micros = 0;
    int64_t deadline_micros = 0;
    std::set<std::string> keys;
  };
  struct Watcher {
    std::string prefix;
    std::shared_ptr<const std::function<void(const WatchEvent&)>> fn;
  };
  // The events of one change, numbered for delivery in commit order; ticket 0: nothing to deliver.
  struct Change {
    uint64_t ticket = 0;
    std::vector<WatchEvent> events;
  };
  // The current state of a key as seen by a write: absent, persistent or ephemeral.
  struct Current {
    std::optional<Versioned> entry;
    std::optional<SessionId> owner;  // set for an ephemeral key
  };

  EmbeddedMetadataStore(const EmbeddedMetadataOptions& options, std::unique_ptr<rocksdb::DB> db);

  [[nodiscard]] int64_t NowMicros() const;
  [[nodiscard]] StatusOr<Current> LookupLocked(std::string_view key) const;
  [[nodiscard]] Status WriteLocked(rocksdb::WriteBatch* batch);
  // Checks `ops` against the state and, if all hold, applies them as one durable batch, appending
  // their events. On failure nothing changed and `failed_op` is the index of the failing
  // operation (ops.size() for a failure of the write itself). `last_version`: of the last put.
  [[nodiscard]] Status ApplyLocked(std::span<const MetaOp> ops, size_t* failed_op,
                                   uint64_t* last_version, std::vector<WatchEvent>* events);
  [[nodiscard]] StatusOr<uint64_t> PutEphemeralLocked(SessionId session, std::string_view key,
                                                      std::string_view value,
                                                      uint64_t expected_version,
                                                      std::vector<WatchEvent>* events);
  // Appends the events of the sessions past their deadline to `events` and drops them.
  void ExpireLocked(std::vector<WatchEvent>* events) const;
  void EndSessionLocked(SessionId id, std::vector<WatchEvent>* events) const;
  // Numbers `events` for delivery if a watcher wants any of them.
  [[nodiscard]] Change MakeChangeLocked(std::vector<WatchEvent> events) const;
  // Runs the callbacks of `change` (and of changes made by them) in ticket order; takes mu_.
  void Deliver(Change change) const;

  const EmbeddedMetadataOptions options_;
  const std::unique_ptr<rocksdb::DB> db_;

  // Everything below is guarded by mu_. Lazy expiry mutates it from const calls (Get, List).
  mutable std::mutex mu_;
  mutable std::condition_variable delivered_cv_;
  mutable std::map<std::string, Ephemeral, std::less<>> ephemerals_;
  mutable std::map<SessionId, Session> sessions_;
  uint64_t next_session_ = 1;
  std::map<WatchId, Watcher> watchers_;
  uint64_t next_watch_ = 1;
  mutable uint64_t last_ticket_ = 0;       // last ticket handed out
  mutable uint64_t delivered_ticket_ = 0;  // every ticket up to this one is delivered
  mutable std::optional<std::thread::id> delivering_thread_;
  mutable std::optional<WatchId> calling_watch_;  // the callback running now, if any
  mutable std::vector<Change> nested_;  // changes made by the running callback, to deliver next
};

}  // namespace shoal::metadata
