#pragma once

// ZooKeeperMetadataStore: a MetadataStore kept in a ZooKeeper ensemble, through the official C
// client (multi-threaded variant). Layout under the root path R (see docs/design/zookeeper.md):
//   R/k/<hex(key)>      one znode per key (the "head"); the name is the key in lowercase hex, so
//                       any byte string is a valid name and names sort like the keys do;
//   R/c/<id>-<n>        the chunks of a value stored out of line (see below).
// A head holds a one-byte tag and then either the value itself or a chunk manifest.
//
// Versions: the interface's version is ZooKeeper's dataVersion + 1 (1 on create, +1 per write).
// Writes read the current heads, check every expected version as the embedded store does (same
// errors), then apply all operations in one zoo_multi whose operations are pinned to the versions
// read (an absent key is pinned by a create+delete pair); if another client changed a key in
// between, the multi fails as a whole and the write is retried from the read.
//
// Values: ZooKeeper's jute.maxbuffer (1 MiB less one byte by default) bounds a whole request, so a
// value of kMaxValueBytes can not be one znode. Values over kInlineValueBytes, and values of a
// Commit beyond kCommitInlineBudget in total, are chunked: chunks of kChunkBytes are written to
// fresh, unique znodes first, then the head pointing at them is committed; the replaced chunks are
// deleted afterwards. The full kMaxValueBytes limit therefore holds. A crash between the two
// leaves unreferenced chunks (garbage, never read).
//
// Watches: one child watch on R/k and an exists watch on every key matched by a prefix, re-armed
// on each fire by a watch thread that re-reads the matched keys and reports each key whose version
// changed (with its current value) or that vanished. Delivery is at least once per change, but
// coalesced: several writes of a key between two reads give one event with the latest value.
// Callbacks run serially on the watch thread (not on the writing thread), and only for changes
// after Watch returned.
//
// Sessions: each OpenSession opens its own ZooKeeper session (its own connection) with the ttl as
// session timeout (the server clamps it to [2, 20] x tickTime), and SessionId is ZooKeeper's
// session id. Ephemeral keys are ephemeral znodes of that session (chunks included). The client
// library heartbeats on its own, so KeepAlive only reports whether the session still lives; a
// session ends when closed or when this process loses ZooKeeper for longer than the timeout, and
// the server then deletes its keys. ExpireSessions does nothing.
//
// Errors: connection loss, timeouts and an expired store session are Unavailable (the outcome of
// a write that got Unavailable is unknown; re-read). Once the store's own session has expired
// (ZooKeeper unreachable, or paused, for longer than session_timeout), the next call opens a new
// one (`zookeeper.reconnected` in the event log) and the watch thread re-arms every watch on it:
// a ZooKeeper outage never leaves the store unusable for good. Calls that had begun on the old
// handle fail Unavailable; the old handle is closed once the last of them returns.
//
// Thread-safe: the ZooKeeper handles are thread-safe; mu_ guards the main handle, the sessions
// and watchers; reconnect_mu_ makes one caller at a time open a new main handle.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/metadata/metadata_store.h"

typedef struct _zhandle zhandle_t;  // NOLINT: the C client's own declaration

namespace shoal::metadata {

inline constexpr size_t kInlineValueBytes = 64 * 1024;
inline constexpr size_t kCommitInlineBudget = 512 * 1024;
inline constexpr size_t kChunkBytes = 256 * 1024;

struct ZooKeeperMetadataOptions {
  std::string hosts;  // "host:port[,host:port...]"
  std::string root;   // absolute znode path, e.g. "/shoal"; created if missing
  std::chrono::milliseconds session_timeout{10'000};  // of the store's own session
  std::chrono::milliseconds connect_timeout{10'000};  // Open and OpenSession give up after this

  // Parses "zk://HOST:PORT[,HOST:PORT...]/PATH".
  [[nodiscard]] static StatusOr<ZooKeeperMetadataOptions> FromUri(std::string_view uri);
};

class ZooKeeperMetadataStore final : public MetadataStore {
 public:
  // Connects and creates the root layout; Unavailable if no server answers in time.
  [[nodiscard]] static StatusOr<std::unique_ptr<ZooKeeperMetadataStore>> Open(
      const ZooKeeperMetadataOptions& options);
  ~ZooKeeperMetadataStore() override;

  ZooKeeperMetadataStore(const ZooKeeperMetadataStore&) = delete;
  ZooKeeperMetadataStore& operator=(const ZooKeeperMetadataStore&) = delete;

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
  void ExpireSessions() override {}

 private:
  struct Watcher {
    std::string prefix;
    std::shared_ptr<const std::function<void(const WatchEvent&)>> fn;
    std::map<std::string, uint64_t> seen;  // key -> version last reported (or read at Watch)
  };
  // The writer of an operation list: plain (store handle, persistent znodes) or a session's.
  struct Writer {
    zhandle_t* zh = nullptr;
    int64_t session = 0;  // 0: persistent writes
  };

  ZooKeeperMetadataStore(ZooKeeperMetadataOptions options, zhandle_t* zh);

  [[nodiscard]] StatusOr<uint64_t> Apply(const Writer& writer, std::span<const MetaOp> ops);
  [[nodiscard]] StatusOr<std::vector<std::pair<std::string, Versioned>>> ListKeys(
      std::string_view prefix, bool watch) const;
  // The C client's watcher for the keys and the key list: any fire marks the store dirty.
  static void WatchFired(zhandle_t* zh, int type, int state, const char* path, void* ctx);
  void WatchLoop();
  [[nodiscard]] Status Poll();
  [[nodiscard]] StatusOr<zhandle_t*> SessionHandle(SessionId session) const;
  // The store's own handle, a new one if the current one's session expired (Unavailable if no
  // server answers within connect_timeout).
  [[nodiscard]] StatusOr<std::shared_ptr<zhandle_t>> Main() const;

  const ZooKeeperMetadataOptions options_;

  mutable std::mutex reconnect_mu_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<zhandle_t> zh_;  // guarded by mu_
  mutable std::condition_variable watch_cv_;
  std::map<SessionId, zhandle_t*> sessions_;  // guarded by mu_
  std::map<WatchId, Watcher> watchers_;       // guarded by mu_
  uint64_t next_watch_ = 1;                   // guarded by mu_
  mutable bool dirty_ = false;                // guarded by mu_: a ZooKeeper watch fired
  bool stop_ = false;                         // guarded by mu_
  std::optional<WatchId> calling_watch_;      // guarded by mu_: the callback running now
  std::condition_variable call_done_cv_;      // signalled when calling_watch_ is reset
  std::thread watch_thread_;
};

}  // namespace shoal::metadata
