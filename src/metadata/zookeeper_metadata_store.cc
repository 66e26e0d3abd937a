#include "src/metadata/zookeeper_metadata_store.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <random>
#include <string_view>
#include <utility>

#include "src/common/host_port.h"
#include "src/common/log.h"
#include "src/metadata/metadata_checks.h"

namespace shoal::metadata {
namespace {

constexpr char kInlineTag = 'i';
constexpr char kChunkedTag = 'c';
// A head never exceeds the inline limit plus its tag; read buffers are sized from this.
constexpr size_t kHeadBufferBytes = kInlineValueBytes + 64;
constexpr int kMaxAttempts = 100;

bool IsConnectionError(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
         rc == ZINVALIDSTATE || rc == ZCLOSING || rc == ZSESSIONMOVED;
}

Status ZkError(int rc, std::string_view context) {
  const std::string message = fmt::format("zookeeper metadata store: {}: {}", context, zerror(rc));
  return IsConnectionError(rc) ? UnavailableError(message) : InternalError(message);
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::optional<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]);
    const int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

// A head as read: the znode's data version and ephemeral owner, and its decoded payload.
struct Head {
  int32_t data_version = 0;
  int64_t owner = 0;  // ZooKeeper session id for an ephemeral key, else 0
  std::string inline_value;
  std::string chunk_id;  // non-empty for a chunked value
  size_t chunk_count = 0;
  size_t size = 0;
  [[nodiscard]] uint64_t version() const { return static_cast<uint64_t>(data_version) + 1; }
};

StatusOr<Head> DecodeHead(std::string_view key, std::string_view data, const Stat& stat) {
  Head head;
  head.data_version = stat.version;
  head.owner = stat.ephemeralOwner;
  if (!data.empty() && data[0] == kInlineTag) {
    head.inline_value = std::string(data.substr(1));
    head.size = head.inline_value.size();
    return head;
  }
  if (!data.empty() && data[0] == kChunkedTag) {
    // "c<id> <count> <size>"
    const std::string text(data.substr(1));
    char id[64] = {};
    size_t count = 0;
    size_t size = 0;
    if (std::sscanf(text.c_str(), "%63s %zu %zu", id, &count, &size) == 3) {
      head.chunk_id = id;
      head.chunk_count = count;
      head.size = size;
      return head;
    }
  }
  return IoError(fmt::format("zookeeper metadata store: key {:?} has a corrupt head", key));
}

// Reads the head of `path`; nullopt if absent.
StatusOr<std::optional<Head>> ReadHead(zhandle_t* zh, std::string_view key,
                                       const std::string& path) {
  std::string buffer(kHeadBufferBytes, '\0');
  int len = static_cast<int>(buffer.size());
  Stat stat{};
  const int rc = zoo_get(zh, path.c_str(), 0, buffer.data(), &len, &stat);
  if (rc == ZNONODE) return std::optional<Head>();
  if (rc != ZOK) return ZkError(rc, fmt::format("get {:?}", key));
  SHOAL_ASSIGN_OR_RETURN(Head head,
                         DecodeHead(key, std::string_view(buffer.data(), std::max(len, 0)), stat));
  return std::optional<Head>(std::move(head));
}

std::string UniqueChunkId() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t process_salt = std::random_device{}() * 0x9e3779b97f4a7c15ULL;
  return fmt::format("{:016x}{:08x}", process_salt ^ static_cast<uint64_t>(getpid()),
                     counter.fetch_add(1));
}

}  // namespace

StatusOr<ZooKeeperMetadataOptions> ZooKeeperMetadataOptions::FromUri(std::string_view uri) {
  constexpr std::string_view kScheme = "zk://";
  if (!uri.starts_with(kScheme)) {
    return InvalidArgumentError(fmt::format("metadata: {:?} is not zk://HOST:PORT/PATH", uri));
  }
  uri.remove_prefix(kScheme.size());
  const size_t slash = uri.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == uri.size()) {
    return InvalidArgumentError("metadata: zk:// needs hosts and a root path, e.g. zk://h:2181/s");
  }
  ZooKeeperMetadataOptions options;
  options.hosts = std::string(uri.substr(0, slash));
  // The C client skips an entry it cannot parse; a typo would only show as a smaller ensemble.
  if (Status hosts = CheckHostPortList(options.hosts); !hosts.ok()) {
    return InvalidArgumentError(
        fmt::format("metadata: zk:// hosts: {}", std::string(hosts.message())));
  }
  options.root = std::string(uri.substr(slash));
  while (options.root.size() > 1 && options.root.back() == '/') options.root.pop_back();
  return options;
}

namespace {

// The session watcher of a handle: records the connection state for the waiter in Connect.
struct ConnectState {
  std::mutex mu;
  std::condition_variable cv;
  int state = 0;
};

void SessionWatcher(zhandle_t* /*zh*/, int type, int state, const char* /*path*/, void* ctx) {
  if (type != ZOO_SESSION_EVENT || ctx == nullptr) return;
  auto* connect = static_cast<ConnectState*>(ctx);
  std::lock_guard lock(connect->mu);
  connect->state = state;
  connect->cv.notify_all();
}

// The ZooKeeper client's own lines (a server that does not answer, a session that expired)
// become `zookeeper.log` warnings of the process's event log, so that --log-format json stays one
// JSON object per line. The client prefixes its time and thread; the line from "ZOO_" on is kept.
void ZooKeeperLogAsEvent(const char* message) {
  std::string_view text = message != nullptr ? message : "";
  if (const auto at = text.find("ZOO_"); at != std::string_view::npos) text.remove_prefix(at);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  log::Warning("zookeeper.log", {{"message", text}});
}

// The handle's context lives as long as the handle; it is freed in CloseHandle.
StatusOr<zhandle_t*> Connect(const std::string& hosts, std::chrono::milliseconds session_timeout,
                             std::chrono::milliseconds connect_timeout) {
  static std::once_flag log_level;
  std::call_once(log_level, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
  auto* connect = new ConnectState;
  zhandle_t* zh =
      zookeeper_init2(hosts.c_str(), SessionWatcher, static_cast<int>(session_timeout.count()),
                      nullptr, connect, 0, &ZooKeeperLogAsEvent);
  if (zh == nullptr) {
    delete connect;
    return UnavailableError(fmt::format("zookeeper metadata store: cannot connect to {}", hosts));
  }
  std::unique_lock lock(connect->mu);
  const bool connected = connect->cv.wait_for(
      lock, connect_timeout, [&] { return connect->state == ZOO_CONNECTED_STATE; });
  lock.unlock();
  if (!connected) {
    zookeeper_close(zh);
    delete connect;
    return UnavailableError(
        fmt::format("zookeeper metadata store: no ZooKeeper server at {} answered within {} ms",
                    hosts, connect_timeout.count()));
  }
  return zh;
}

void CloseHandle(zhandle_t* zh) {
  auto* connect = static_cast<ConnectState*>(const_cast<void*>(zoo_get_context(zh)));
  zookeeper_close(zh);
  delete connect;
}

Status CreatePath(zhandle_t* zh, const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    const int rc = zoo_create(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT,
                              nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) return ZkError(rc, fmt::format("create {}", prefix));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<ZooKeeperMetadataStore>> ZooKeeperMetadataStore::Open(
    const ZooKeeperMetadataOptions& options) {
  if (options.hosts.empty() || !options.root.starts_with('/') || options.root.size() < 2) {
    return InvalidArgumentError("zookeeper metadata store: hosts and an absolute root required");
  }
  SHOAL_ASSIGN_OR_RETURN(zhandle_t * zh,
                         Connect(options.hosts, options.session_timeout, options.connect_timeout));
  Status made = CreatePath(zh, options.root + "/k");
  if (made.ok()) made = CreatePath(zh, options.root + "/c");
  if (!made.ok()) {
    CloseHandle(zh);
    return made;
  }
  return std::unique_ptr<ZooKeeperMetadataStore>(new ZooKeeperMetadataStore(options, zh));
}

ZooKeeperMetadataStore::ZooKeeperMetadataStore(ZooKeeperMetadataOptions options, zhandle_t* zh)
    : options_(std::move(options)), zh_(zh, &CloseHandle) {
  watch_thread_ = std::thread([this] { WatchLoop(); });
}

ZooKeeperMetadataStore::~ZooKeeperMetadataStore() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  watch_cv_.notify_all();
  watch_thread_.join();
  // Closing a session handle ends its ZooKeeper session, which deletes its ephemeral keys.
  for (const auto& [id, handle] : sessions_) CloseHandle(handle);
}

StatusOr<std::shared_ptr<zhandle_t>> ZooKeeperMetadataStore::Main() const {
  std::shared_ptr<zhandle_t> current;
  {
    std::lock_guard lock(mu_);
    current = zh_;
  }
  if (zoo_state(current.get()) != ZOO_EXPIRED_SESSION_STATE) return current;
  std::lock_guard reconnect(reconnect_mu_);
  {
    std::lock_guard lock(mu_);
    if (zh_ != current) return zh_;  // another caller reconnected meanwhile
  }
  SHOAL_ASSIGN_OR_RETURN(zhandle_t * fresh, Connect(options_.hosts, options_.session_timeout,
                                                    options_.connect_timeout));
  std::shared_ptr<zhandle_t> handle(fresh, &CloseHandle);
  {
    std::lock_guard lock(mu_);
    zh_ = handle;
    dirty_ = true;  // the watches were the old session's: the watch thread re-arms them here
  }
  watch_cv_.notify_all();
  log::Warning("zookeeper.reconnected",
               {{"hosts", std::string_view(options_.hosts)},
                {"note", "the store's session had expired; a new session replaces it"}});
  return handle;
}

StatusOr<Versioned> ZooKeeperMetadataStore::Get(std::string_view key) const {
  SHOAL_RETURN_IF_ERROR(CheckKey(key));
  const std::string path = options_.root + "/k/" + Hex(key);
  SHOAL_ASSIGN_OR_RETURN(const std::shared_ptr<zhandle_t> zh, Main());
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<Head> head, ReadHead(zh.get(), key, path));
    if (!head.has_value()) {
      return NotFoundError(fmt::format("metadata store: key {:?} not found", key));
    }
    if (head->chunk_id.empty()) {
      return Versioned{.value = std::move(head->inline_value), .version = head->version()};
    }
    std::string value;
    value.reserve(head->size);
    bool replaced = false;
    for (size_t i = 0; i < head->chunk_count && !replaced; ++i) {
      const std::string chunk = fmt::format("{}/c/{}-{}", options_.root, head->chunk_id, i);
      std::string buffer(kChunkBytes, '\0');
      int len = static_cast<int>(buffer.size());
      const int rc = zoo_get(zh.get(), chunk.c_str(), 0, buffer.data(), &len, nullptr);
      if (rc == ZNONODE) {
        replaced = true;  // a concurrent write replaced the value and dropped these chunks
      } else if (rc != ZOK) {
        return ZkError(rc, fmt::format("get chunk {} of {:?}", i, key));
      } else {
        value.append(buffer.data(), static_cast<size_t>(std::max(len, 0)));
      }
    }
    if (replaced) continue;
    if (value.size() != head->size) {
      return IoError(fmt::format("zookeeper metadata store: key {:?}: chunks hold {} bytes, not {}",
                                 key, value.size(), head->size));
    }
    return Versioned{.value = std::move(value), .version = head->version()};
  }
  return AbortedError(fmt::format("metadata store: key {:?} changed on every read", key));
}

StatusOr<uint64_t> ZooKeeperMetadataStore::Put(std::string_view key, std::string_view value,
                                               uint64_t expected_version) {
  const MetaOp op = MetaOp::Put(std::string(key), std::string(value), expected_version);
  SHOAL_ASSIGN_OR_RETURN(const std::shared_ptr<zhandle_t> zh, Main());
  return Apply(Writer{.zh = zh.get(), .session = 0}, std::span<const MetaOp>(&op, 1));
}

Status ZooKeeperMetadataStore::Delete(std::string_view key, uint64_t expected_version) {
  SHOAL_RETURN_IF_ERROR(CheckKey(key));
  if (expected_version != kAnyVersion) {
    // NotFound for an absent key, as the interface says (a Commit reports FailedPrecondition).
    auto current = Get(key);
    if (!current.ok()) return current.status();
  }
  const MetaOp op = MetaOp::Delete(std::string(key), expected_version);
  SHOAL_ASSIGN_OR_RETURN(const std::shared_ptr<zhandle_t> zh, Main());
  return Apply(Writer{.zh = zh.get(), .session = 0}, std::span<const MetaOp>(&op, 1)).status();
}

Status ZooKeeperMetadataStore::Commit(std::span<const MetaOp> ops) {
  SHOAL_ASSIGN_OR_RETURN(const std::shared_ptr<zhandle_t> zh, Main());
  return Apply(Writer{.zh = zh.get(), .session = 0}, ops).status();
}

StatusOr<uint64_t> ZooKeeperMetadataStore::Apply(const Writer& writer,
                                                 std::span<const MetaOp> ops) {
  if (ops.size() > kMaxCommitOps) {
    return ResourceExhaustedError(fmt::format(
        "metadata store: commit of {} operations; the limit is {}", ops.size(), kMaxCommitOps));
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    Status valid = CheckKey(ops[i].key);
    if (valid.ok() && ops[i].kind == MetaOp::Kind::kPut)
      valid = CheckValue(ops[i].key, ops[i].value);
    if (!valid.ok()) {
      return MakeStatus(valid.code(), fmt::format("operation {}: {}", i, MessageOf(valid)));
    }
  }
  if (ops.empty()) return uint64_t{0};
  const int mode = writer.session != 0 ? ZOO_EPHEMERAL : ZOO_PERSISTENT;

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // The state of each touched key as the commit sees it, starting from what is stored.
    struct KeyState {
      std::string path;
      std::optional<Head> stored;  // as read
      bool exists = false;         // during the simulated commit
      int32_t data_version = 0;
      int64_t owner = 0;
      bool touched = false;             // a ZooKeeper op on it is already in the multi
      std::vector<std::string> chunks;  // of the value it holds during the simulated commit
    };
    std::map<std::string, KeyState, std::less<>> keys;
    std::deque<std::string> buffers;  // keeps the paths and data of the multi alive
    std::vector<zoo_op_t> zops;
    std::vector<std::string> staged_chunks;
    std::vector<std::string> dropped_chunks;  // of replaced values, deleted after success
    size_t inline_bytes = 0;
    uint64_t last_version = 0;
    Status failure = OkStatus();

    auto drop_staged = [&] {
      for (const std::string& chunk : staged_chunks) (void)zoo_delete(writer.zh, chunk.c_str(), -1);
    };
    // The value of `state` is replaced or deleted: its chunks go once the multi succeeded.
    auto drop_chunks_of = [&](KeyState& state) {
      for (std::string& chunk : state.chunks) dropped_chunks.push_back(std::move(chunk));
      state.chunks.clear();
    };
    // Pins an absent key that no earlier op touched: create+delete fails if it appeared.
    auto pin_absent = [&](KeyState& state) {
      if (state.touched) return;
      state.touched = true;
      zops.emplace_back();
      zoo_create_op_init(&zops.back(), state.path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                         ZOO_PERSISTENT, nullptr, 0);
      zops.emplace_back();
      zoo_delete_op_init(&zops.back(), state.path.c_str(), 0);
    };

    for (size_t i = 0; i < ops.size() && failure.ok(); ++i) {
      const MetaOp& op = ops[i];
      auto it = keys.find(op.key);
      if (it == keys.end()) {
        KeyState state;
        state.path = options_.root + "/k/" + Hex(op.key);
        auto read = ReadHead(writer.zh, op.key, state.path);
        if (!read.ok()) {
          failure = read.status();
          break;
        }
        state.stored = *std::move(read);
        state.exists = state.stored.has_value();
        if (state.exists) {
          state.data_version = state.stored->data_version;
          state.owner = state.stored->owner;
          for (size_t c = 0; c < state.stored->chunk_count; ++c) {
            state.chunks.push_back(
                fmt::format("{}/c/{}-{}", options_.root, state.stored->chunk_id, c));
          }
        }
        it = keys.emplace(op.key, std::move(state)).first;
      }
      KeyState& state = it->second;
      const uint64_t current = state.exists ? static_cast<uint64_t>(state.data_version) + 1 : 0;
      const bool matches = op.expected_version == kAnyVersion ||
                           (op.expected_version == kMustNotExist && !state.exists) ||
                           (state.exists && op.expected_version == current);
      if (!matches) {
        failure = FailedPreconditionError(
            fmt::format("operation {}: metadata store: key {:?}: expected {}, found {}", i, op.key,
                        ExpectedName(op.expected_version),
                        state.exists ? fmt::format("version {}", current) : std::string("absent")));
        break;
      }
      if (op.kind == MetaOp::Kind::kPut && state.exists && state.owner != writer.session) {
        failure = FailedPreconditionError(
            writer.session == 0
                ? fmt::format("operation {}: metadata store: key {:?} is ephemeral (owned by {}); "
                              "write it with PutEphemeral",
                              i, op.key,
                              SessionId(static_cast<uint64_t>(state.owner)).DebugString())
                : fmt::format("metadata store: key {:?} is {}", op.key,
                              state.owner == 0 ? "persistent" : "owned by another session"));
        break;
      }
      if (op.kind == MetaOp::Kind::kCheck) {
        if (state.exists) {
          zops.emplace_back();
          zoo_check_op_init(&zops.back(), state.path.c_str(), state.data_version);
          state.touched = true;
        } else {
          pin_absent(state);
        }
      } else if (op.kind == MetaOp::Kind::kDelete) {
        if (state.exists) {
          zops.emplace_back();
          zoo_delete_op_init(&zops.back(), state.path.c_str(), state.data_version);
          drop_chunks_of(state);
          state.touched = true;
          state.exists = false;
        } else {
          pin_absent(state);
        }
      } else {
        // The head: the value inline, or a manifest of chunks written now, before the multi.
        drop_chunks_of(state);
        std::string& data = buffers.emplace_back();
        if (op.value.size() <= kInlineValueBytes &&
            inline_bytes + op.value.size() <= kCommitInlineBudget) {
          inline_bytes += op.value.size();
          data.reserve(op.value.size() + 1);
          data.push_back(kInlineTag);
          data.append(op.value);
        } else {
          const std::string id = UniqueChunkId();
          const size_t count = (op.value.size() + kChunkBytes - 1) / kChunkBytes;
          for (size_t c = 0; c < count && failure.ok(); ++c) {
            const std::string chunk = fmt::format("{}/c/{}-{}", options_.root, id, c);
            const std::string_view part =
                std::string_view(op.value).substr(c * kChunkBytes, kChunkBytes);
            const int rc =
                zoo_create(writer.zh, chunk.c_str(), part.data(), static_cast<int>(part.size()),
                           &ZOO_OPEN_ACL_UNSAFE, mode, nullptr, 0);
            if (rc != ZOK) {
              failure = ZkError(rc, fmt::format("write chunk of {:?}", op.key));
            } else {
              staged_chunks.push_back(chunk);
              state.chunks.push_back(chunk);
            }
          }
          data = fmt::format("{}{} {} {}", kChunkedTag, id, count, op.value.size());
        }
        zops.emplace_back();
        if (state.exists) {
          zoo_set_op_init(&zops.back(), state.path.c_str(), data.data(),
                          static_cast<int>(data.size()), state.data_version, nullptr);
          ++state.data_version;
        } else {
          zoo_create_op_init(&zops.back(), state.path.c_str(), data.data(),
                             static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE, mode, nullptr, 0);
          state.data_version = 0;
          state.owner = writer.session;
          state.exists = true;
        }
        state.touched = true;
        last_version = static_cast<uint64_t>(state.data_version) + 1;
      }
    }
    if (!failure.ok()) {
      drop_staged();
      return failure;
    }
    std::vector<zoo_op_result_t> results(zops.size());
    const int rc = zops.empty() ? ZOK
                                : zoo_multi(writer.zh, static_cast<int>(zops.size()), zops.data(),
                                            results.data());
    if (rc == ZOK) {
      for (const std::string& chunk : dropped_chunks)
        (void)zoo_delete(writer.zh, chunk.c_str(), -1);
      return last_version;
    }
    drop_staged();
    if (rc == ZBADVERSION || rc == ZNONODE || rc == ZNODEEXISTS) continue;  // raced: re-read
    return ZkError(rc, "multi (outcome unknown if the connection was lost)");
  }
  return AbortedError("metadata store: the keys of a write changed on every attempt");
}

StatusOr<std::vector<std::pair<std::string, Versioned>>> ZooKeeperMetadataStore::List(
    std::string_view prefix) const {
  return ListKeys(prefix, false);
}

StatusOr<std::vector<std::pair<std::string, Versioned>>> ZooKeeperMetadataStore::ListKeys(
    std::string_view prefix, bool watch) const {
  const std::string parent = options_.root + "/k";
  String_vector children{};
  SHOAL_ASSIGN_OR_RETURN(const std::shared_ptr<zhandle_t> zh, Main());
  const int rc = watch ? zoo_wget_children(zh.get(), parent.c_str(), WatchFired,
                                           const_cast<ZooKeeperMetadataStore*>(this), &children)
                       : zoo_get_children(zh.get(), parent.c_str(), 0, &children);
  if (rc != ZOK) return ZkError(rc, "list keys");
  const std::string hex_prefix = Hex(prefix);
  std::vector<std::string> keys;
  for (int32_t i = 0; i < children.count; ++i) {
    const std::string_view name(children.data[i]);
    if (!name.starts_with(hex_prefix)) continue;
    if (auto key = Unhex(name); key.has_value()) keys.push_back(*std::move(key));
  }
  deallocate_String_vector(&children);
  std::sort(keys.begin(), keys.end());
  std::vector<std::pair<std::string, Versioned>> out;
  out.reserve(keys.size());
  for (std::string& key : keys) {
    if (watch) {
      const std::string path = parent + "/" + Hex(key);
      Stat stat{};
      const int wrc = zoo_wexists(zh.get(), path.c_str(), WatchFired,
                                  const_cast<ZooKeeperMetadataStore*>(this), &stat);
      if (wrc != ZOK && wrc != ZNONODE) return ZkError(wrc, "watch key");
    }
    auto value = Get(key);
    if (value.ok()) {
      out.emplace_back(std::move(key), *std::move(value));
    } else if (value.status().code() != StatusCode::kNotFound) {
      return value.status();  // a key deleted since the listing is simply left out
    }
  }
  return out;
}

StatusOr<SessionId> ZooKeeperMetadataStore::OpenSession(std::chrono::milliseconds ttl) {
  if (ttl.count() <= 0) return InvalidArgumentError("metadata store: session ttl must be > 0");
  SHOAL_ASSIGN_OR_RETURN(zhandle_t * zh,
                         Connect(options_.hosts, ttl, std::max(ttl, options_.connect_timeout)));
  const SessionId id(static_cast<uint64_t>(zoo_client_id(zh)->client_id));
  std::lock_guard lock(mu_);
  sessions_.emplace(id, zh);
  return id;
}

StatusOr<zhandle_t*> ZooKeeperMetadataStore::SessionHandle(SessionId session) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end() || zoo_state(it->second) == ZOO_EXPIRED_SESSION_STATE) {
    return NotFoundError(fmt::format("metadata store: session {} is gone", session.DebugString()));
  }
  return it->second;
}

Status ZooKeeperMetadataStore::KeepAlive(SessionId session) {
  return SessionHandle(session).status();
}

Status ZooKeeperMetadataStore::CloseSession(SessionId session) {
  zhandle_t* zh = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
      return NotFoundError(
          fmt::format("metadata store: session {} is gone", session.DebugString()));
    }
    zh = it->second;
    sessions_.erase(it);
  }
  const bool expired = zoo_state(zh) == ZOO_EXPIRED_SESSION_STATE;
  CloseHandle(zh);
  if (expired) {
    return NotFoundError(fmt::format("metadata store: session {} expired", session.DebugString()));
  }
  return OkStatus();
}

StatusOr<uint64_t> ZooKeeperMetadataStore::PutEphemeral(SessionId session, std::string_view key,
                                                        std::string_view value,
                                                        uint64_t expected_version) {
  SHOAL_ASSIGN_OR_RETURN(zhandle_t * zh, SessionHandle(session));
  const MetaOp op = MetaOp::Put(std::string(key), std::string(value), expected_version);
  return Apply(Writer{.zh = zh, .session = static_cast<int64_t>(session.value())},
               std::span<const MetaOp>(&op, 1));
}

}  // namespace shoal::metadata
