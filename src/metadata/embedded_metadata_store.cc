#include "src/metadata/embedded_metadata_store.h"

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <system_error>
#include <utility>

#include "src/metadata/metadata_checks.h"
#include "src/storage/engine_info_log.h"

namespace shoal::metadata {
namespace {

constexpr size_t kVersionBytes = 8;

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

Status FromRocks(const rocksdb::Status& status, std::string_view context) {
  if (status.ok()) return OkStatus();
  return IoError(fmt::format("metadata store: {}: {}", context, status.ToString()));
}

// The stored form of a persistent key: the version (8 bytes, little-endian), then the value.
std::string EncodeStored(uint64_t version, std::string_view value) {
  std::string out;
  out.reserve(kVersionBytes + value.size());
  for (size_t i = 0; i < kVersionBytes; ++i) out.push_back(static_cast<char>(version >> (8 * i)));
  out.append(value);
  return out;
}

StatusOr<Versioned> DecodeStored(std::string_view key, std::string_view stored) {
  uint64_t version = 0;
  if (stored.size() >= kVersionBytes) {
    for (size_t i = 0; i < kVersionBytes; ++i) {
      version |= static_cast<uint64_t>(static_cast<uint8_t>(stored[i])) << (8 * i);
    }
  }
  if (version == 0) {
    return IoError(fmt::format("metadata store: key {:?} has a corrupt stored value", key));
  }
  return Versioned{.value = std::string(stored.substr(kVersionBytes)), .version = version};
}

bool VersionMatches(const std::optional<Versioned>& current, uint64_t expected) {
  if (expected == kAnyVersion) return true;
  if (expected == kMustNotExist) return !current.has_value();
  return current.has_value() && current->version == expected;
}

std::string CurrentName(const std::optional<Versioned>& current) {
  return current.has_value() ? fmt::format("version {}", current->version) : "absent";
}

Status MismatchError(std::string_view key, uint64_t expected,
                     const std::optional<Versioned>& current) {
  return FailedPreconditionError(fmt::format("metadata store: key {:?}: expected {}, found {}", key,
                                             ExpectedName(expected), CurrentName(current)));
}

Status EphemeralError(std::string_view key, SessionId owner) {
  return FailedPreconditionError(
      fmt::format("metadata store: key {:?} is ephemeral (owned by {}); write it with PutEphemeral",
                  key, owner.DebugString()));
}

}  // namespace

StatusOr<std::unique_ptr<EmbeddedMetadataStore>> EmbeddedMetadataStore::Open(
    const EmbeddedMetadataOptions& options) {
  if (options.path.empty()) return InvalidArgumentError("metadata store: empty path");
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  // The metadata (the map, the move log, sessions) is small: a 4 MiB memtable, not the 64 MiB
  // default, whose WAL preallocation dominated opening and closing a store.
  db_options.write_buffer_size = 4u << 20;
  // RocksDB's info log through a writer that a failing disk cannot crash (engine_info_log.h).
  std::error_code ec;
  std::filesystem::create_directories(options.path, ec);
  if (ec) return IoError(fmt::format("metadata store: create {}: {}", options.path, ec.message()));
  db_options.info_log = storage::EngineInfoLog::Open(options.path);
  rocksdb::DB* raw = nullptr;
  SHOAL_RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(db_options, options.path, &raw), "open " + options.path));
  return std::unique_ptr<EmbeddedMetadataStore>(
      new EmbeddedMetadataStore(options, std::unique_ptr<rocksdb::DB>(raw)));
}

EmbeddedMetadataStore::EmbeddedMetadataStore(const EmbeddedMetadataOptions& options,
                                             std::unique_ptr<rocksdb::DB> db)
    : options_(options), db_(std::move(db)) {}

EmbeddedMetadataStore::~EmbeddedMetadataStore() {
  // Close reports errors that the destructor of DB would swallow; there is no one to tell.
  rocksdb::Status ignored = db_->Close();
  (void)ignored;
}

int64_t EmbeddedMetadataStore::NowMicros() const {
  if (options_.now_micros) return options_.now_micros();
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

StatusOr<EmbeddedMetadataStore::Current> EmbeddedMetadataStore::LookupLocked(
    std::string_view key) const {
  if (auto it = ephemerals_.find(key); it != ephemerals_.end()) {
    return Current{.entry = Versioned{.value = it->second.value, .version = it->second.version},
                   .owner = it->second.owner};
  }
  std::string stored;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), ToSlice(key), &stored);
  if (s.IsNotFound()) return Current{};
  SHOAL_RETURN_IF_ERROR(FromRocks(s, "get"));
  SHOAL_ASSIGN_OR_RETURN(Versioned entry, DecodeStored(key, stored));
  return Current{.entry = std::move(entry), .owner = std::nullopt};
}

Status EmbeddedMetadataStore::WriteLocked(rocksdb::WriteBatch* batch) {
  rocksdb::WriteOptions write_options;
  write_options.sync = options_.sync;
  return FromRocks(db_->Write(write_options, batch), "write");
}

void EmbeddedMetadataStore::EndSessionLocked(SessionId id, std::vector<WatchEvent>* events) const {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  for (const std::string& key : it->second.keys) {
    ephemerals_.erase(key);
    events->push_back({.key = key, .value = std::nullopt});
  }
  sessions_.erase(it);
}

void EmbeddedMetadataStore::ExpireLocked(std::vector<WatchEvent>* events) const {
  const int64_t now = NowMicros();
  std::vector<SessionId> expired;
  for (const auto& [id, session] : sessions_) {
    if (now >= session.deadline_micros) expired.push_back(id);
  }
  for (SessionId id : expired) EndSessionLocked(id, events);
}

EmbeddedMetadataStore::Change EmbeddedMetadataStore::MakeChangeLocked(
    std::vector<WatchEvent> events) const {
  const bool wanted = std::any_of(events.begin(), events.end(), [this](const WatchEvent& event) {
    return std::any_of(watchers_.begin(), watchers_.end(), [&event](const auto& entry) {
      return event.key.starts_with(entry.second.prefix);
    });
  });
  if (!wanted) return {};
  return {.ticket = ++last_ticket_, .events = std::move(events)};
}

// Delivery in commit order without holding mu_ during callbacks: every change that a watcher
// wants takes the next ticket under mu_, and the thread that made it waits until all earlier
// tickets are delivered before running its callbacks. A change made from inside a callback can
// not wait (its own thread holds the earlier ticket), so it is queued in nested_ and delivered by
// the same thread once the callback's ticket is done.
void EmbeddedMetadataStore::Deliver(Change change) const {
  if (change.ticket == 0) return;
  const std::thread::id self = std::this_thread::get_id();
  std::unique_lock lock(mu_);
  if (delivering_thread_ == self) {
    nested_.push_back(std::move(change));
    return;
  }
  std::deque<Change> pending;
  pending.push_back(std::move(change));
  while (!pending.empty()) {
    Change next = std::move(pending.front());
    pending.pop_front();
    delivered_cv_.wait(lock, [&] { return delivered_ticket_ + 1 == next.ticket; });
    delivering_thread_ = self;
    for (const WatchEvent& event : next.events) {
      std::vector<WatchId> targets;
      for (const auto& [id, watcher] : watchers_) {
        if (event.key.starts_with(watcher.prefix)) targets.push_back(id);
      }
      for (WatchId id : targets) {
        // An earlier callback may have unwatched it.
        auto it = watchers_.find(id);
        if (it == watchers_.end()) continue;
        auto fn = it->second.fn;
        calling_watch_ = id;
        lock.unlock();
        (*fn)(event);
        lock.lock();
        calling_watch_.reset();
        delivered_cv_.notify_all();
      }
    }
    delivering_thread_.reset();
    delivered_ticket_ = next.ticket;
    // Nested tickets are larger than every ticket already in `pending` and ascending.
    for (Change& nested : nested_) pending.push_back(std::move(nested));
    nested_.clear();
    delivered_cv_.notify_all();
  }
}

StatusOr<Versioned> EmbeddedMetadataStore::Get(std::string_view key) const {
  SHOAL_RETURN_IF_ERROR(CheckKey(key));
  std::vector<WatchEvent> expired;
  StatusOr<Current> current;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&expired);
    current = LookupLocked(key);
    change = MakeChangeLocked(std::move(expired));
  }
  Deliver(std::move(change));
  if (!current.ok()) return current.status();
  if (!current->entry.has_value()) {
    return NotFoundError(fmt::format("metadata store: key {:?} not found", key));
  }
  return *std::move(current->entry);
}

Status EmbeddedMetadataStore::ApplyLocked(std::span<const MetaOp> ops, size_t* failed_op,
                                          uint64_t* last_version, std::vector<WatchEvent>* events) {
  // The state of each touched key after the operations so far; nothing is written until all hold.
  struct Staged {
    Current original;
    std::optional<Versioned> now;
    bool ephemeral = false;  // still the original ephemeral key
    bool written = false;
  };
  std::map<std::string, Staged, std::less<>> staged;
  std::vector<WatchEvent> changes;
  for (size_t i = 0; i < ops.size(); ++i) {
    const MetaOp& op = ops[i];
    *failed_op = i;
    SHOAL_RETURN_IF_ERROR(CheckKey(op.key));
    if (op.kind == MetaOp::Kind::kPut) SHOAL_RETURN_IF_ERROR(CheckValue(op.key, op.value));
    auto it = staged.find(op.key);
    if (it == staged.end()) {
      SHOAL_ASSIGN_OR_RETURN(Current current, LookupLocked(op.key));
      Staged entry{.original = current,
                   .now = current.entry,
                   .ephemeral = current.owner.has_value(),
                   .written = false};
      it = staged.emplace(op.key, std::move(entry)).first;
    }
    Staged& key = it->second;
    switch (op.kind) {
      case MetaOp::Kind::kCheck:
        if (!VersionMatches(key.now, op.expected_version)) {
          return MismatchError(op.key, op.expected_version, key.now);
        }
        break;
      case MetaOp::Kind::kPut:
        if (key.ephemeral) return EphemeralError(op.key, *key.original.owner);
        if (!VersionMatches(key.now, op.expected_version)) {
          return MismatchError(op.key, op.expected_version, key.now);
        }
        key.now =
            Versioned{.value = op.value, .version = key.now.has_value() ? key.now->version + 1 : 1};
        key.written = true;
        *last_version = key.now->version;
        changes.push_back({.key = op.key, .value = key.now});
        break;
      case MetaOp::Kind::kDelete:
        if (!key.now.has_value()) {
          if (op.expected_version == kAnyVersion) break;
          return NotFoundError(fmt::format("metadata store: key {:?} not found", op.key));
        }
        if (!VersionMatches(key.now, op.expected_version)) {
          return MismatchError(op.key, op.expected_version, key.now);
        }
        key.now.reset();
        key.ephemeral = false;
        key.written = true;
        changes.push_back({.key = op.key, .value = std::nullopt});
        break;
    }
  }
  *failed_op = ops.size();

  rocksdb::WriteBatch batch;
  for (const auto& [name, key] : staged) {
    if (!key.written) continue;
    if (key.now.has_value()) {
      batch.Put(ToSlice(name), ToSlice(EncodeStored(key.now->version, key.now->value)));
    } else if (key.original.entry.has_value() && !key.original.owner.has_value()) {
      batch.Delete(ToSlice(name));
    }
  }
  if (batch.Count() > 0) SHOAL_RETURN_IF_ERROR(WriteLocked(&batch));
  // Deleted ephemeral keys go only once the batch is durable, so a failed write changes nothing.
  for (const auto& [name, key] : staged) {
    if (!key.written || !key.original.owner.has_value()) continue;
    ephemerals_.erase(name);
    if (auto session = sessions_.find(*key.original.owner); session != sessions_.end()) {
      session->second.keys.erase(name);
    }
  }
  for (WatchEvent& change : changes) events->push_back(std::move(change));
  return OkStatus();
}

StatusOr<uint64_t> EmbeddedMetadataStore::Put(std::string_view key, std::string_view value,
                                              uint64_t expected_version) {
  const MetaOp op = MetaOp::Put(std::string(key), std::string(value), expected_version);
  std::vector<WatchEvent> events;
  size_t failed_op = 0;
  uint64_t version = 0;
  Status status;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&events);
    status = ApplyLocked(std::span<const MetaOp>(&op, 1), &failed_op, &version, &events);
    change = MakeChangeLocked(std::move(events));
  }
  Deliver(std::move(change));
  if (!status.ok()) return status;
  return version;
}

Status EmbeddedMetadataStore::Delete(std::string_view key, uint64_t expected_version) {
  const MetaOp op = MetaOp::Delete(std::string(key), expected_version);
  std::vector<WatchEvent> events;
  size_t failed_op = 0;
  uint64_t version = 0;
  Status status;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&events);
    status = ApplyLocked(std::span<const MetaOp>(&op, 1), &failed_op, &version, &events);
    change = MakeChangeLocked(std::move(events));
  }
  Deliver(std::move(change));
  return status;
}

Status EmbeddedMetadataStore::Commit(std::span<const MetaOp> ops) {
  if (ops.size() > kMaxCommitOps) {
    return ResourceExhaustedError(fmt::format(
        "metadata store: commit of {} operations; the limit is {}", ops.size(), kMaxCommitOps));
  }
  std::vector<WatchEvent> events;
  size_t failed_op = 0;
  uint64_t version = 0;
  Status status;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&events);
    status = ApplyLocked(ops, &failed_op, &version, &events);
    change = MakeChangeLocked(std::move(events));
  }
  Deliver(std::move(change));
  if (status.ok() || failed_op >= ops.size()) return status;
  // Inside a transaction an absent key is a failed condition like any other.
  if (status.code() == StatusCode::kNotFound) {
    status = FailedPreconditionError(MessageOf(status));
  }
  return Prefixed(status, fmt::format("commit operation {}", failed_op));
}

StatusOr<std::vector<std::pair<std::string, Versioned>>> EmbeddedMetadataStore::List(
    std::string_view prefix) const {
  std::vector<WatchEvent> expired;
  std::vector<std::pair<std::string, Versioned>> result;
  Status status;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&expired);
    change = MakeChangeLocked(std::move(expired));
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(ToSlice(prefix)); it->Valid() && it->key().starts_with(ToSlice(prefix));
         it->Next()) {
      const std::string_view key(it->key().data(), it->key().size());
      StatusOr<Versioned> entry =
          DecodeStored(key, std::string_view(it->value().data(), it->value().size()));
      if (!entry.ok()) {
        status = entry.status();
        break;
      }
      result.emplace_back(std::string(key), *std::move(entry));
    }
    if (status.ok()) status = FromRocks(it->status(), "list");
    for (auto e = ephemerals_.lower_bound(prefix);
         e != ephemerals_.end() && e->first.starts_with(prefix); ++e) {
      result.emplace_back(e->first,
                          Versioned{.value = e->second.value, .version = e->second.version});
    }
  }
  Deliver(std::move(change));
  if (!status.ok()) return status;
  // Both sources are sorted bytewise (std::string compares as unsigned bytes, like RocksDB's
  // default comparator) and a key is in at most one of them.
  std::sort(result.begin(), result.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return result;
}

WatchId EmbeddedMetadataStore::Watch(std::string prefix,
                                     std::function<void(const WatchEvent&)> fn) {
  std::lock_guard lock(mu_);
  const WatchId id(next_watch_++);
  watchers_.emplace(
      id,
      Watcher{.prefix = std::move(prefix),
              .fn = std::make_shared<const std::function<void(const WatchEvent&)>>(std::move(fn))});
  return id;
}

void EmbeddedMetadataStore::Unwatch(WatchId id) {
  std::unique_lock lock(mu_);
  watchers_.erase(id);
  // Wait out a call of this callback on another thread; from inside it, waiting would deadlock.
  if (delivering_thread_ == std::this_thread::get_id()) return;
  delivered_cv_.wait(lock, [&] { return calling_watch_ != id; });
}

StatusOr<SessionId> EmbeddedMetadataStore::OpenSession(std::chrono::milliseconds ttl) {
  if (ttl.count() <= 0) {
    return InvalidArgumentError(
        fmt::format("metadata store: session ttl {} ms must be positive", ttl.count()));
  }
  std::vector<WatchEvent> expired;
  SessionId id;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&expired);
    id = SessionId(next_session_++);
    const int64_t ttl_micros = std::chrono::duration_cast<std::chrono::microseconds>(ttl).count();
    sessions_.emplace(
        id,
        Session{.ttl_micros = ttl_micros, .deadline_micros = NowMicros() + ttl_micros, .keys = {}});
    change = MakeChangeLocked(std::move(expired));
  }
  Deliver(std::move(change));
  return id;
}

Status EmbeddedMetadataStore::KeepAlive(SessionId session) {
  std::vector<WatchEvent> expired;
  Status status;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&expired);
    if (auto it = sessions_.find(session); it != sessions_.end()) {
      it->second.deadline_micros = NowMicros() + it->second.ttl_micros;
    } else {
      status = NotFoundError(
          fmt::format("metadata store: session {} expired or closed", session.DebugString()));
    }
    change = MakeChangeLocked(std::move(expired));
  }
  Deliver(std::move(change));
  return status;
}

Status EmbeddedMetadataStore::CloseSession(SessionId session) {
  std::vector<WatchEvent> events;
  Status status;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&events);
    if (sessions_.contains(session)) {
      EndSessionLocked(session, &events);
    } else {
      status = NotFoundError(
          fmt::format("metadata store: session {} expired or closed", session.DebugString()));
    }
    change = MakeChangeLocked(std::move(events));
  }
  Deliver(std::move(change));
  return status;
}

StatusOr<uint64_t> EmbeddedMetadataStore::PutEphemeral(SessionId session, std::string_view key,
                                                       std::string_view value,
                                                       uint64_t expected_version) {
  SHOAL_RETURN_IF_ERROR(CheckKey(key));
  SHOAL_RETURN_IF_ERROR(CheckValue(key, value));
  std::vector<WatchEvent> events;
  StatusOr<uint64_t> result;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&events);
    result = PutEphemeralLocked(session, key, value, expected_version, &events);
    change = MakeChangeLocked(std::move(events));
  }
  Deliver(std::move(change));
  return result;
}

StatusOr<uint64_t> EmbeddedMetadataStore::PutEphemeralLocked(SessionId session,
                                                             std::string_view key,
                                                             std::string_view value,
                                                             uint64_t expected_version,
                                                             std::vector<WatchEvent>* events) {
  auto owner = sessions_.find(session);
  if (owner == sessions_.end()) {
    return NotFoundError(
        fmt::format("metadata store: session {} expired or closed", session.DebugString()));
  }
  SHOAL_ASSIGN_OR_RETURN(Current current, LookupLocked(key));
  if (current.entry.has_value() && !current.owner.has_value()) {
    return FailedPreconditionError(
        fmt::format("metadata store: key {:?} is persistent, not ephemeral", key));
  }
  if (current.owner.has_value() && *current.owner != session) {
    return FailedPreconditionError(fmt::format("metadata store: key {:?} is owned by session {}",
                                               key, current.owner->DebugString()));
  }
  if (!VersionMatches(current.entry, expected_version)) {
    return MismatchError(key, expected_version, current.entry);
  }
  const uint64_t version = current.entry.has_value() ? current.entry->version + 1 : 1;
  Ephemeral& stored = ephemerals_[std::string(key)];
  stored = Ephemeral{.value = std::string(value), .version = version, .owner = session};
  owner->second.keys.emplace(key);
  events->push_back({.key = std::string(key),
                     .value = Versioned{.value = std::string(value), .version = version}});
  return version;
}

void EmbeddedMetadataStore::ExpireSessions() {
  std::vector<WatchEvent> expired;
  Change change;
  {
    std::lock_guard lock(mu_);
    ExpireLocked(&expired);
    change = MakeChangeLocked(std::move(expired));
  }
  Deliver(std::move(change));
}

}  // namespace shoal::metadata
