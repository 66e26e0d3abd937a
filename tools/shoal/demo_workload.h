#pragma once

// The workload of `shoal demo`: client threads that load documents and then run a mixed
// workload, each on its own keys, with a model of every key precise enough to find a lost write
// or a resurrected delete at the end (Verify). Thread-safe as documented per method.

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/client/client.h"
#include "src/common/status.h"
#include "src/transport/thread_runtime.h"

namespace shoal::tools::demo {

struct DemoOptions {
  std::string data_dir;  // empty: a fresh temporary directory, removed at the end
  uint64_t documents = 20'000;
  double duration_seconds = 10;
  uint32_t clients = 4;
  // K: copies of every bucket. With K > 1 a node is also killed mid-run and restarted.
  uint32_t replicas = 3;
  // Off: every copy the failure phase rebuilds comes from a snapshot, as before log retention
  // (CoordinatorOptions::resume_copies_from_log), for a comparison.
  bool log_resume = true;
  bool json = false;
};

inline constexpr size_t kPayloadChars = 100;
inline constexpr size_t kMaxErrorSamples = 8;

[[nodiscard]] std::string PrimaryKey(uint64_t key);

// What a client thread knows about one of its keys. A key belongs to one thread, so the model
// is exact except after a write whose outcome is unknown: its result joins the states the key
// may be in, and the next definite outcome narrows them to one again.
struct KeyModel {
  enum class LastAck : uint8_t { kNone, kWrite, kDelete };

  std::vector<std::optional<std::string>> states{std::nullopt};  // nullopt: absent
  LastAck last_ack = LastAck::kNone;

  [[nodiscard]] bool Allows(const std::optional<std::string>& state) const {
    return std::find(states.begin(), states.end(), state) != states.end();
  }
  void Settle(std::optional<std::string> state) {
    states.clear();
    states.push_back(std::move(state));
  }
  void Widen(std::optional<std::string> state) {
    if (!Allows(state)) states.push_back(std::move(state));
  }
  // A definite observation: false (and no change) if the model does not allow it.
  [[nodiscard]] bool Observe(const std::optional<std::string>& state) {
    if (!Allows(state)) return false;
    Settle(state);
    return true;
  }
  // The key is present with a body we were not told (an insert answered DUPLICATE).
  [[nodiscard]] bool ObservePresent() {
    std::vector<std::optional<std::string>> present;
    for (auto& state : states) {
      if (state.has_value()) present.push_back(std::move(state));
    }
    if (present.empty()) return false;
    states = std::move(present);
    return true;
  }
};

// The keys of one client thread: index, index + clients, index + 2 * clients, ...
struct Shard {
  std::mutex mu;
  std::map<uint64_t, KeyModel> keys;  // guarded by mu
  uint64_t allocated = 0;             // keys with j < allocated exist; guarded by mu
};

struct Verification {
  uint64_t keys = 0;
  uint64_t live = 0;
  uint64_t lost_writes = 0;
  uint64_t resurrected_deletes = 0;
  uint64_t duplicate_query_results = 0;
  uint64_t missing_query_results = 0;
};

// The client threads, their key models and their counters.
class Workload {
 public:
  Workload(transport::ThreadRuntime& runtime, client::Client& client, CollectionId collection,
           const DemoOptions& options)
      : runtime_(runtime),
        client_(client),
        collection_(collection),
        options_(options),
        shards_(options.clients) {}
  ~Workload() { Stop(); }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // Inserts the initial documents from every client thread in parallel; returns when done.
  void Load() {
    RunThreads([this](uint32_t index) { LoadShard(index); });
    JoinThreads();
  }
  // Starts the mixed workload; it runs until Stop.
  void Start() {
    stop_.store(false);
    RunThreads([this](uint32_t index) { MixShard(index); });
  }
  void Stop() {
    stop_.store(true);
    JoinThreads();
  }

  // Gets every key of the model and walks the collection with one query. Call after Stop.
  [[nodiscard]] Verification Verify();

  [[nodiscard]] uint64_t ops() const { return ops_.load(); }
  [[nodiscard]] uint64_t acknowledged_writes() const { return acknowledged_.load(); }
  [[nodiscard]] uint64_t errors() const { return errors_.load(); }
  [[nodiscard]] uint64_t unknown_outcomes() const { return unknown_.load(); }
  [[nodiscard]] uint64_t inconsistent() const { return inconsistent_.load(); }
  [[nodiscard]] std::vector<std::string> error_samples() const {
    std::lock_guard<std::mutex> lock(samples_mu_);
    return samples_;
  }

 private:
  enum class WriteKind : uint8_t { kInsert, kUpdate, kUpsert, kDelete };

  void RunThreads(std::function<void(uint32_t)> fn) {
    for (uint32_t i = 0; i < options_.clients; ++i) {
      threads_.emplace_back([this, fn, i] {
        // Each thread is its own client process towards the cluster.
        transport::ThreadRuntime::ScopedActor actor(runtime_, transport::Address::Client(i + 1));
        fn(i);
      });
    }
  }
  void JoinThreads() {
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }

  [[nodiscard]] uint64_t KeyOf(uint32_t index, uint64_t j) const {
    return index + j * options_.clients;
  }

  void LoadShard(uint32_t index);
  void MixShard(uint32_t index);
  void Write(Shard& shard, WriteKind kind, uint64_t key, std::optional<std::string> body);
  void Read(Shard& shard, uint64_t key);
  void VerifyShard(uint32_t index, Verification* out, std::map<std::string, std::string>* live);
  void RecordError(std::string_view what, const Status& status);
  void RecordInconsistency(std::string message);

  transport::ThreadRuntime& runtime_;
  client::Client& client_;
  const CollectionId collection_;
  const DemoOptions options_;
  std::vector<Shard> shards_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> revision_{0};
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> acknowledged_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> unknown_{0};
  std::atomic<uint64_t> inconsistent_{0};
  mutable std::mutex samples_mu_;
  std::vector<std::string> samples_;  // guarded by samples_mu_
};

}  // namespace shoal::tools::demo
