#pragma once

// The fixture of the real-process replication tests (replication_test.cc): a ProcessCluster at
// K = 3 with one writer thread per bucket, the history of every write and its outcome, and the
// checks every case ends with. Thread-safety: the writers and the history lock their own state;
// the fixture itself is driven by the test's main thread.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/client/client.h"
#include "src/cluster/shard_map.h"
#include "src/common/point.h"
#include "src/net/grpc_runtime.h"
#include "src/transport/messages.h"
#include "tests/cluster/copy_check.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kBuckets = 8;
constexpr uint32_t kReplicas = 3;
constexpr uint32_t kMinInSync = 2;
constexpr char kCollection[] = "replication";
constexpr int kKeysPerWriter = 4;
constexpr int kStableKeysPerBucket = 2;
// A key's state when no write of it was acknowledged (or it reads as absent).
constexpr int64_t kAbsent = -1;

inline int64_t MillisSince(Clock::time_point since, Clock::time_point until = Clock::now()) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(until - since).count();
}

inline std::string ValueOf(const std::string& key, int64_t seq) {
  return fmt::format(R"({{"key": "{}", "seq": {}}})", key, seq);
}

// The sequence number a document body holds.
inline StatusOr<int64_t> SeqOf(const std::string& key, const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.contains("seq")) {
    return InternalError(fmt::format("{} holds {}", key, body));
  }
  return json["seq"].get<int64_t>();
}

// What a read through the client library shows: a sequence number, or kAbsent.
inline StatusOr<int64_t> ReadSeq(client::Client& client, CollectionId collection,
                                 const std::string& key) {
  auto doc = client.Get(collection, key);
  if (!doc.ok()) {
    if (doc.status().code() == StatusCode::kNotFound) return kAbsent;
    return doc.status();
  }
  return SeqOf(key, doc->body);
}

// The same through the public API.
inline StatusOr<int64_t> ReadSeq(Collection& collection, const std::string& key) {
  auto doc = collection.Get(key);
  if (!doc.ok()) {
    if (doc.status().code() == StatusCode::kNotFound) return kAbsent;
    return doc.status();
  }
  return SeqOf(key, doc->json);
}

// A write refused because its bucket has fewer in-sync copies than min_in_sync: the node's
// NOT_ENOUGH_REPLICAS (kUnavailable), as the client returns it once it gave up retrying (with its
// message, which names the floor).
inline bool NotEnoughReplicas(const Status& status) {
  return status.code() == StatusCode::kUnavailable &&
         (transport::ClusterErrorOf(status) == transport::ClusterError::kNotEnoughReplicas ||
          status.ToString().find("min_in_sync") != std::string::npos);
}

// Every write of the test's keys and its outcome. Each key has one writer at a time and its
// writes carry growing sequence numbers, so a read can be judged: it must show the last write
// acknowledged before it began, or a later write (acknowledged, or of unknown outcome).
// Thread-safe.
class History {
 public:
  // A fresh sequence number, greater than every one before.
  int64_t Next() { return next_.fetch_add(1) + 1; }
  // Before a write of `seq` to `key` is sent: from then on its outcome is unknown.
  void Sent(const std::string& key, int64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    keys_[key].sent.insert(seq);
  }
  void Acknowledged(const std::string& key, int64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    Key& k = keys_[key];
    k.acknowledged = std::max(k.acknowledged, seq);
  }
  // The last acknowledged sequence number of `key`, or kAbsent.
  int64_t LastAcknowledged(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = keys_.find(key);
    return it == keys_.end() ? kAbsent : it->second.acknowledged;
  }
  // "" when a read of `key` that began once `floor` (LastAcknowledged then) was acknowledged may
  // show `read`; otherwise what is wrong with it.
  std::string Judge(const std::string& key, int64_t floor, int64_t read) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = keys_.find(key);
    if (read == kAbsent) {
      return floor == kAbsent ? ""
                              : fmt::format("{}: acknowledged seq {}, reads absent", key, floor);
    }
    if (it == keys_.end() || !it->second.sent.contains(read)) {
      return fmt::format("{}: reads seq {}, which was never written", key, read);
    }
    if (read < floor) {
      return fmt::format("{}: acknowledged seq {} before the read began, reads older seq {}", key,
                         floor, read);
    }
    return "";
  }
  std::vector<std::string> Keys() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> keys;
    for (const auto& [key, k] : keys_) keys.push_back(key);
    return keys;
  }

 private:
  struct Key {
    int64_t acknowledged = kAbsent;
    std::set<int64_t> sent;
  };
  std::atomic<int64_t> next_{0};
  mutable std::mutex mu_;
  std::map<std::string, Key> keys_;
};

// A thread that upserts its keys in turn through its own network client (the public API, which
// follows the map by its watch), pausing 5 ms after an acknowledgement and 20 ms after a failure,
// and records each write in the History and each acknowledgement's time.
class Writer {
 public:
  Writer(std::string uri, ConnectOptions connect, History* history, std::vector<std::string> keys)
      : uri_(std::move(uri)),
        connect_(std::move(connect)),
        history_(history),
        keys_(std::move(keys)) {}
  ~Writer() { Stop(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  [[nodiscard]] Status Start() {
    auto db = Database::Connect(uri_, connect_);
    if (!db.ok()) return db.status();
    db_ = std::move(*db);
    auto collection = db_->GetCollection(kCollection);
    if (!collection.ok()) return collection.status();
    thread_ = std::thread([this, c = std::move(*collection)]() mutable { Run(c); });
    return OkStatus();
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] uint64_t acknowledged() const { return acknowledged_.load(); }
  // When the first write that began at or after `since` was acknowledged.
  [[nodiscard]] std::optional<Clock::time_point> FirstAcknowledgedAfter(
      Clock::time_point since) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [began, ended] : acks_) {
      if (began >= since) return ended;
    }
    return std::nullopt;
  }
  [[nodiscard]] std::string last_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_error_;
  }
  [[nodiscard]] const std::vector<std::string>& keys() const { return keys_; }

 private:
  void Run(Collection& collection) {
    for (size_t i = 0; !stop_; ++i) {
      const std::string& key = keys_[i % keys_.size()];
      const int64_t seq = history_->Next();
      history_->Sent(key, seq);
      const Clock::time_point began = Clock::now();
      auto written = collection.Upsert(key, ValueOf(key, seq));
      if (written.ok()) {
        history_->Acknowledged(key, seq);
        {
          std::lock_guard<std::mutex> lock(mu_);
          acks_.emplace_back(began, Clock::now());
        }
        ++acknowledged_;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else {
        {
          std::lock_guard<std::mutex> lock(mu_);
          last_error_ = written.status().ToString();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }

  const std::string uri_;
  const ConnectOptions connect_;
  History* const history_;
  const std::vector<std::string> keys_;
  std::unique_ptr<Database> db_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> acknowledged_{0};
  mutable std::mutex mu_;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> acks_;  // (began, acknowledged)
  std::string last_error_;
};

// A thread running `body`, which should return once `stop` is true: Join and the destructor set
// it and join, so that a failed assertion of the test's thread still ends the thread.
class Background {
 public:
  explicit Background(std::function<void(const std::atomic<bool>& stop)> body)
      : thread_([this, body = std::move(body)] { body(stop_); }) {}
  ~Background() { Join(); }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  void Join() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class ReplicationTest : public testing::Test {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(25).c_str());
    for (auto& [bucket, writer] : writers_) writer->Stop();
    writers_.clear();
    client_.reset();
    runtime_.reset();
    cluster_.reset();
  }

  // A coordinator and nodes 1..nodes keeping kReplicas copies of kBuckets buckets, serving and
  // balanced; the collection, and kStableKeysPerBucket keys written once in each bucket.
  void StartCluster(uint32_t nodes) {
    cluster_->SetReplication(kReplicas, kMinInSync);
    const Status coordinator = cluster_->StartCoordinator(nodes, kBuckets);
    ASSERT_TRUE(coordinator.ok()) << coordinator;
    for (uint32_t id = 1; id <= nodes; ++id) {
      const Status started = cluster_->StartNode(id);
      ASSERT_TRUE(started.ok()) << started;
    }
    const Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
    // The nodes start one after the other: on a busy machine a primary may report a backup that
    // is not up yet, or a primary may be failed over before its first heartbeat; the repairs and
    // handoffs that follow restore every copy and even the primaries.
    const Status settled = AwaitMap(
        "every bucket with its copies and every store bound",
        [](const cluster::ShardMap& map) {
          return std::all_of(map.buckets().begin(), map.buckets().end(),
                             [](const auto& b) {
                               return b.replicas.size() == kReplicas && !b.transition.has_value();
                             }) &&
                 std::all_of(map.nodes().begin(), map.nodes().end(),
                             [](const cluster::NodeInfo& n) { return n.store_id != 0; });
        },
        60);
    ASSERT_TRUE(settled.ok()) << settled;
    const Status balanced = cluster_->AwaitBalanced(std::chrono::seconds(60));
    ASSERT_TRUE(balanced.ok()) << balanced;
    auto runtime = cluster_->ClientRuntime();
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    runtime_ = std::move(*runtime);
    client_ = std::make_unique<client::Client>(*runtime_);
    ASSERT_TRUE(client_->Refresh().ok());
    auto collection = client_->OpenCollection(kCollection);
    ASSERT_TRUE(collection.ok()) << collection.status();
    collection_ = *collection;
    const cluster::ShardMapPtr map = Map();
    ASSERT_NE(map, nullptr);
    ASSERT_EQ(map->replication_factor(), kReplicas);
    ASSERT_EQ(map->min_in_sync(), kMinInSync);
    ASSERT_EQ(map->buckets().size(), kBuckets);
    for (const auto& bucket : map->buckets()) {
      for (const std::string& key : KeysIn(*map, bucket.id, "s", kStableKeysPerBucket)) {
        ASSERT_NO_FATAL_FAILURE(Write(*client_, key));
      }
    }
  }

  // The coordinator's map (nullptr if it did not answer within 10 s).
  cluster::ShardMapPtr Map() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      auto state = cluster_->State();
      if (state.ok()) return state->map;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return nullptr;
  }

  // Polls the coordinator's map until `done` holds: OK, or kDeadlineExceeded with the last map.
  Status AwaitMap(const std::string& what,
                  const std::function<bool(const cluster::ShardMap&)>& done, int seconds) {
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    std::string last = "no map";
    while (Clock::now() < until) {
      auto state = cluster_->State();
      if (state.ok()) {
        if (done(*state->map)) return OkStatus();
        last = fmt::format("epoch {}:", state->map->epoch().value());
        for (const auto& bucket : state->map->buckets()) last += " " + bucket.DebugString();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return DeadlineExceededError(fmt::format("{} not within {} s; {}", what, seconds, last));
  }

  // `n` keys "PREFIX<bucket>-<i>" of the collection that fall in `bucket`.
  std::vector<std::string> KeysIn(const cluster::ShardMap& map, BucketId bucket,
                                  const std::string& prefix, int n) const {
    std::vector<std::string> keys;
    for (int i = 0; static_cast<int>(keys.size()) < n; ++i) {
      std::string key = fmt::format("{}{}-{}", prefix, bucket.value(), i);
      if (map.Lookup(PointOf(collection_, key)).id == bucket) keys.push_back(std::move(key));
    }
    return keys;
  }

  // Writes `key` through `client` until a write is acknowledged (for up to 60 s: on a busy
  // machine a stalled process may be failed over or removed at any time, and its buckets refuse
  // writes for a moment).
  void Write(client::Client& client, const std::string& key) {
    Status last;
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < until) {
      const int64_t seq = history_.Next();
      history_.Sent(key, seq);
      auto written = client.Upsert(collection_, key, ValueOf(key, seq));
      if (written.ok()) {
        history_.Acknowledged(key, seq);
        return;
      }
      last = written.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << key << ": " << last;
  }

  // Starts a writer thread per bucket of the map, each on kKeysPerWriter keys of its bucket, and
  // waits until each had writes acknowledged.
  void StartWriters() {
    const cluster::ShardMapPtr map = Map();
    ASSERT_NE(map, nullptr);
    for (const auto& bucket : map->buckets()) {
      auto writer =
          std::make_unique<Writer>(cluster_->uri(), cluster_->connect_options(), &history_,
                                   KeysIn(*map, bucket.id, "w", kKeysPerWriter));
      const Status started = writer->Start();
      ASSERT_TRUE(started.ok()) << started;
      writers_[bucket.id] = std::move(writer);
    }
    ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  }

  // A thread that reads, round and round, every writer's key and the stable keys of each bucket
  // of a map, judging each answer against what was acknowledged before the read began
  // (History::Judge); a read not served is no harm. Read its counts after Join.
  struct StaleReads {
    std::atomic<uint64_t> reads{0};
    std::atomic<uint64_t> stale{0};
    std::string first_stale;
    std::unique_ptr<Background> thread;

    void Join() { thread->Join(); }
    // Stops the reader and expects it to have read a lot, never stale.
    void ExpectNoneStale() {
      Join();
      EXPECT_GT(reads.load(), 100u);
      EXPECT_EQ(stale.load(), 0u) << "first: " << first_stale;
      fmt::print("{} reads during the rebuild, none stale\n", reads.load());
    }
  };
  std::unique_ptr<StaleReads> StartStaleReader(const cluster::ShardMap& map) {
    std::vector<std::string> keys;
    for (const auto& [bucket, writer] : writers_) {
      keys.insert(keys.end(), writer->keys().begin(), writer->keys().end());
    }
    for (const auto& bucket : map.buckets()) {
      for (std::string& key : KeysIn(map, bucket.id, "s", kStableKeysPerBucket)) {
        keys.push_back(std::move(key));
      }
    }
    auto out = std::make_unique<StaleReads>();
    out->thread = std::make_unique<Background>(
        [this, keys = std::move(keys), r = out.get()](const std::atomic<bool>& stop) {
          client::Client client(*runtime_);
          for (size_t i = 0; !stop; ++i) {
            const std::string& key = keys[i % keys.size()];
            const int64_t floor = history_.LastAcknowledged(key);
            auto read = ReadSeq(client, collection_, key);
            if (!read.ok()) continue;
            ++r->reads;
            if (std::string problem = history_.Judge(key, floor, *read); !problem.empty()) {
              if (r->stale++ == 0) r->first_stale = problem;
            }
          }
        });
    return out;
  }

  std::vector<BucketId> AllBuckets() const {
    std::vector<BucketId> all;
    for (const auto& [bucket, writer] : writers_) all.push_back(bucket);
    return all;
  }

  // Until the writer of each of `buckets` had `more` further writes acknowledged.
  void AwaitWrites(const std::vector<BucketId>& buckets, uint64_t more, int seconds) {
    std::map<BucketId, uint64_t> goal;
    for (BucketId b : buckets) goal[b] = writers_.at(b)->acknowledged() + more;
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    for (BucketId b : buckets) {
      while (writers_.at(b)->acknowledged() < goal[b] && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ASSERT_GE(writers_.at(b)->acknowledged(), goal[b])
          << "writes to " << b.DebugString() << " not acknowledged within " << seconds
          << " s; last error: " << writers_.at(b)->last_error();
    }
  }

  // The buckets whose primary is `node` in `map`, and those it is a backup of.
  static std::vector<BucketId> PrimariesOf(const cluster::ShardMap& map, NodeId node) {
    std::vector<BucketId> out;
    for (const auto& bucket : map.buckets()) {
      if (!bucket.replicas.empty() && bucket.replicas.front() == node) out.push_back(bucket.id);
    }
    return out;
  }
  static std::vector<BucketId> BackupsOf(const cluster::ShardMap& map, NodeId node) {
    std::vector<BucketId> out;
    for (const auto& bucket : map.buckets()) {
      if (bucket.HasReplica(node) && bucket.replicas.front() != node) out.push_back(bucket.id);
    }
    return out;
  }
  static bool ListedNowhere(const cluster::ShardMap& map, NodeId node) {
    return std::none_of(map.buckets().begin(), map.buckets().end(),
                        [&](const auto& bucket) { return bucket.HasReplica(node); });
  }

  // Prints, for each of `buckets`, the time from `since` until the first write its writer began
  // after `since` was acknowledged (expected within 30 s, a liveness bound only); returns the
  // longest.
  int64_t MeasureWritesBack(const std::string& event, const std::vector<BucketId>& buckets,
                            Clock::time_point since) {
    int64_t longest = 0;
    for (BucketId b : buckets) {
      std::optional<Clock::time_point> back;
      const auto until = since + std::chrono::seconds(30);
      while (!(back = writers_.at(b)->FirstAcknowledgedAfter(since)).has_value() &&
             Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_TRUE(back.has_value())
          << "no write to " << b.DebugString() << " acknowledged within "
          << "30 s of the " << event << "; last error: " << writers_.at(b)->last_error();
      if (!back.has_value()) continue;
      const int64_t ms = MillisSince(since, *back);
      longest = std::max(longest, ms);
      fmt::print("[ measure ] {} -> writes to {} acknowledged again: {} ms\n", event,
                 b.DebugString(), ms);
    }
    fmt::print("[ measure ] {} -> writes to all {} of its buckets acknowledged again: {} ms\n",
               event, buckets.size(), longest);
    std::fflush(stdout);
    return longest;
  }

  // Reads each of `keys` through `client` (retrying errors for up to `seconds` in all) and
  // expects an answer that History::Judge accepts for each.
  void ExpectReadsCurrent(client::Client& client, const std::vector<std::string>& keys, int seconds,
                          const std::string& context) {
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    for (const std::string& key : keys) {
      const int64_t floor = history_.LastAcknowledged(key);
      StatusOr<int64_t> read = ReadSeq(client, collection_, key);
      while (!read.ok() && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        read = ReadSeq(client, collection_, key);
      }
      EXPECT_TRUE(read.ok()) << context << ": " << key << ": " << read.status();
      if (read.ok()) {
        EXPECT_EQ(history_.Judge(key, floor, *read), "") << context;
      }
    }
  }

  // Writes a key of `b` (of `map`) until the write is refused with NOT_ENOUGH_REPLICAS, for up to
  // `seconds`; the last outcome. Each write is recorded in the History.
  Status AwaitNotEnoughReplicas(const cluster::ShardMap& map, BucketId b, int seconds) {
    client::ClientOptions options;
    options.max_attempts = 3;
    client::Client prober(*runtime_, options);
    const std::string key = KeysIn(map, b, "p", 1).front();
    Status last = UnavailableError("not tried");
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    while (!NotEnoughReplicas(last) && Clock::now() < until) {
      (void)prober.Refresh();
      const int64_t seq = history_.Next();
      history_.Sent(key, seq);
      auto written = prober.Upsert(collection_, key, ValueOf(key, seq));
      if (written.ok()) history_.Acknowledged(key, seq);
      last = written.status();
      if (!NotEnoughReplicas(last)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return last;
  }

  // Stops the writers and reads every key of the History through a new client: none may have
  // lost an acknowledged write. Then, once no move is in flight, compares every copy of each
  // bucket (ExpectCopiesEqual), which kills the nodes: the last check of a test.
  void ExpectNothingLost() {
    for (auto& [bucket, writer] : writers_) writer->Stop();
    uint64_t acknowledged = 0;
    for (const auto& [bucket, writer] : writers_) acknowledged += writer->acknowledged();
    EXPECT_GT(acknowledged, 100u);
    auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(db.ok()) << db.status();
    auto collection = (*db)->GetCollection(kCollection);
    ASSERT_TRUE(collection.ok()) << collection.status();
    uint64_t lost = 0;
    uint64_t unreadable = 0;
    std::string first;
    const std::vector<std::string> keys = history_.Keys();
    const auto until = Clock::now() + std::chrono::seconds(30);
    for (const std::string& key : keys) {
      const int64_t floor = history_.LastAcknowledged(key);
      StatusOr<int64_t> read = ReadSeq(*collection, key);
      while (!read.ok() && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        read = ReadSeq(*collection, key);
      }
      if (!read.ok()) {
        ++unreadable;
        if (first.empty()) first = fmt::format("{}: {}", key, read.status().ToString());
        continue;
      }
      if (std::string problem = history_.Judge(key, floor, *read); !problem.empty()) {
        ++lost;
        if (first.empty()) first = problem;
      }
    }
    EXPECT_EQ(lost, 0u) << first;
    EXPECT_EQ(unreadable, 0u) << first;
    fmt::print("{} keys read back, {} acknowledged writes by the writers\n", keys.size(),
               acknowledged);
    std::optional<cluster::ShardMap> quiet;
    const Status settled = AwaitMap(
        "no move in flight",
        [&quiet](const cluster::ShardMap& map) {
          if (std::ranges::any_of(map.buckets(),
                                  [](const auto& b) { return b.transition.has_value(); })) {
            return false;
          }
          quiet = map;
          return true;
        },
        60);
    ASSERT_TRUE(settled.ok()) << settled;
    // A write the primary applied but no client saw acknowledged reaches its backups in the
    // replication stream's next batch.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ExpectCopiesEqual(*cluster_, *quiet);
  }

  // Until the map binds `node` to a store other than `old_store` (it was reset, §4.6).
  [[nodiscard]] Status AwaitNewStore(NodeId node, uint64_t old_store) {
    return AwaitMap(
        fmt::format("n{} bound to a new store", node.value()),
        [&](const auto& map) {
          const cluster::NodeInfo* info = map.FindNode(node);
          return info != nullptr && info->store_id != 0 && info->store_id != old_store;
        },
        60);
  }

  // Starts `node` again (its data gone: a directory deleted, a disk replaced) and waits until it
  // is bound to a new store, every bucket has its copies again and writes to every bucket go on.
  void RestartAndAwaitRebuilt(NodeId node, uint64_t old_store) {
    ASSERT_TRUE(cluster_->Restart(node.value()).ok());
    const Status reset = AwaitNewStore(node, old_store);
    EXPECT_TRUE(reset.ok()) << reset;
    ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
    ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  }

  // Polls `shoal status --json` until every bucket has kReplicas copies, a reachable primary and
  // no move in flight, and every node is reachable.
  void AwaitFullyReplicated(int seconds) {
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    std::string out;
    while (Clock::now() < until) {
      if (cluster_->RunCli({"status", "--json"}, &out) == 0) {
        auto status = nlohmann::json::parse(out, nullptr, false);
        bool done = !status.is_discarded() && status["replication_factor"] == kReplicas &&
                    status["under_replicated_buckets"] == 0 &&
                    status["below_min_in_sync_buckets"] == 0 &&
                    status["primary_unreachable_buckets"] == 0 && status["moves_in_flight"].empty();
        for (const auto& node : status["nodes"]) done = done && node["reachable"].get<bool>();
        if (done) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    FAIL() << "not every bucket has " << kReplicas << " copies within " << seconds
           << " s; status: " << out;
  }

  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<net::GrpcRuntime> runtime_;
  std::unique_ptr<client::Client> client_;
  CollectionId collection_;
  History history_;
  std::map<BucketId, std::unique_ptr<Writer>> writers_;
};

}  // namespace shoal::cluster_test
