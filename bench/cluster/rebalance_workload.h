#pragma once

// The client side of rebalance_bench (docs/results/rebalance.md): the steady workload with one
// latency sample per operation, the 100 ms progress sampler, and the helpers both use. Only
// rebalance_bench.cc includes this file.

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/client/client.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/coordinator/coordinator.h"
#include "src/storage/errors.h"
#include "src/transport/thread_runtime.h"

namespace shoal::bench {

inline constexpr uint32_t kMainActor = 1000;  // worker threads are Address::Client(1..)
inline constexpr transport::Micros kSampleInterval = 100'000;
inline constexpr size_t kMaxErrorSamples = 8;

inline void Die(std::string_view what, const Status& status) {
  fmt::print(stderr, "error: {}: {}\n", what, status.ToString());
  std::exit(1);
}

inline std::string Key(uint64_t i) { return fmt::format("key-{:010}", i); }

// A JSON document of about `bytes` bytes whose payload differs per (key, revision).
inline std::string Body(uint64_t key, uint64_t revision, size_t bytes, Random& random) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string head = fmt::format(R"({{"id":{},"rev":{},"payload":")", key, revision);
  const size_t payload = bytes > head.size() + 2 ? bytes - head.size() - 2 : 1;
  std::string out = std::move(head);
  out.reserve(out.size() + payload + 2);
  uint64_t bits = 0;
  for (size_t i = 0; i < payload; ++i) {
    if (i % 10 == 0) bits = random.Next64();
    out.push_back(kAlphabet[bits & 63]);
    bits >>= 6;
  }
  out += "\"}";
  return out;
}

inline double Percentile(std::vector<int32_t>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank.
  size_t rank = static_cast<size_t>(p * static_cast<double>(values.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, values.size());
  return static_cast<double>(values[rank - 1]);
}

struct OpSample {
  transport::Micros end = 0;
  int32_t micros = 0;
};

struct Window {
  double seconds = 0;
  uint64_t ops = 0;
  double ops_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  // Share of the clients' time (clients x seconds) spent in operations of at least 2 ms and
  // 10 ms: how much of a throughput loss is stalls rather than uniformly slower operations.
  double slow2_share = 0;
  double slow10_share = 0;
};

inline nlohmann::json ToJson(const Window& w) {
  return {{"seconds", w.seconds},
          {"ops", w.ops},
          {"ops_per_s", w.ops_per_second},
          {"p50_ms", w.p50_ms},
          {"p99_ms", w.p99_ms},
          {"max_ms", w.max_ms},
          {"slow2_share", w.slow2_share},
          {"slow10_share", w.slow10_share}};
}

// Counts client failures; keeps a few messages.
class Errors {
 public:
  void Record(std::string_view what, const Status& status) {
    count_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    if (samples_.size() < kMaxErrorSamples) {
      samples_.push_back(fmt::format("{}: {}", what, status.ToString()));
    }
  }
  [[nodiscard]] uint64_t count() const { return count_.load(); }
  [[nodiscard]] std::vector<std::string> samples() const {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }

 private:
  std::atomic<uint64_t> count_{0};
  mutable std::mutex mu_;
  std::vector<std::string> samples_;
};

// Runs `fn(index)` on `count` threads, each a client process of its own; joins them.
inline void RunThreads(transport::ThreadRuntime& runtime, uint32_t count, uint32_t first_actor,
                       const std::function<void(uint32_t)>& fn) {
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < count; ++i) {
    threads.emplace_back([&runtime, &fn, first_actor, i] {
      transport::ThreadRuntime::ScopedActor actor(runtime,
                                                  transport::Address::Client(first_actor + i));
      fn(i);
    });
  }
  for (auto& thread : threads) thread.join();
}

inline std::unique_ptr<client::Client> NewClient(transport::ThreadRuntime& runtime) {
  auto client = std::make_unique<client::Client>(runtime);
  if (Status s = client->Refresh(); !s.ok()) Die("client refresh", s);
  return client;
}

// The steady workload: 50% Get, 50% Upsert of random loaded keys, one latency sample per
// operation (kept per thread; windows are cut afterwards).
class Workload {
 public:
  Workload(transport::ThreadRuntime& runtime, CollectionId collection, uint32_t clients,
           size_t doc_bytes, uint64_t keys, Errors& errors)
      : runtime_(runtime),
        collection_(collection),
        clients_(clients),
        doc_bytes_(doc_bytes),
        keys_(keys),
        errors_(errors),
        samples_(clients) {}
  ~Workload() { Stop(); }

  void Start() {
    stop_.store(false);
    runner_ = std::thread(
        [this] { RunThreads(runtime_, clients_, 1, [this](uint32_t index) { Loop(index); }); });
  }
  void Stop() {
    stop_.store(true);
    if (runner_.joinable()) runner_.join();
  }
  [[nodiscard]] uint64_t ops() const { return ops_.load(); }

  // Throughput and latency of the operations that ended in [from, to). Call while stopped.
  [[nodiscard]] Window Between(transport::Micros from, transport::Micros to) const {
    Window w;
    std::vector<int32_t> latencies;
    for (const auto& thread : samples_) {
      for (const OpSample& s : thread) {
        if (s.end >= from && s.end < to) latencies.push_back(s.micros);
      }
    }
    w.seconds = static_cast<double>(to - from) / 1e6;
    w.ops = latencies.size();
    w.ops_per_second = w.seconds > 0 ? static_cast<double>(w.ops) / w.seconds : 0;
    w.p50_ms = Percentile(latencies, 0.50) / 1000.0;
    w.p99_ms = Percentile(latencies, 0.99) / 1000.0;
    w.max_ms = latencies.empty() ? 0.0 : latencies.back() / 1000.0;
    double slow2 = 0;
    double slow10 = 0;
    for (const int32_t micros : latencies) {
      if (micros >= 2'000) slow2 += micros;
      if (micros >= 10'000) slow10 += micros;
    }
    const double client_micros = w.seconds * 1e6 * clients_;
    if (client_micros > 0) {
      w.slow2_share = slow2 / client_micros;
      w.slow10_share = slow10 / client_micros;
    }
    return w;
  }

 private:
  void Loop(uint32_t index) {
    // Named so that a scheduler trace (perf sched) tells the clients from the cluster's threads.
    pthread_setname_np(pthread_self(), fmt::format("client-{}", index).c_str());
    auto client = NewClient(runtime_);
    Random random(runtime_.RandomU64());
    std::vector<OpSample>& samples = samples_[index];
    while (!stop_.load()) {
      const uint64_t key = random.Uniform(keys_);
      const std::string pk = Key(key);
      const bool read = random.OneIn(2);
      std::string body;
      if (!read) body = Body(key, revision_.fetch_add(1) + 1, doc_bytes_, random);
      const transport::Micros start = runtime_.Now();
      Status status;
      if (read) {
        auto document = client->Get(collection_, pk);
        if (!document.ok() && !storage::Is(document.status(), storage::ErrorReason::kNotFound)) {
          status = document.status();
        }
      } else {
        status = client->Upsert(collection_, pk, body).status();
      }
      const transport::Micros end = runtime_.Now();
      if (!status.ok()) errors_.Record(read ? "get" : "upsert", status);
      samples.push_back(OpSample{.end = end, .micros = static_cast<int32_t>(end - start)});
      ops_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  transport::ThreadRuntime& runtime_;
  const CollectionId collection_;
  const uint32_t clients_;
  const size_t doc_bytes_;
  const uint64_t keys_;
  Errors& errors_;
  std::vector<std::vector<OpSample>> samples_;  // one per thread
  std::thread runner_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> revision_{0};
};

// Every 100 ms: operations done and the coordinator's move progress.
class Sampler {
 public:
  struct Sample {
    transport::Micros at = 0;
    uint64_t ops = 0;
    uint64_t bytes_moved = 0;
    uint64_t committed = 0;
    uint64_t in_flight = 0;
  };

  Sampler(transport::ThreadRuntime& runtime, const Workload& workload,
          std::shared_ptr<coordinator::Coordinator> coordinator)
      : runtime_(runtime), workload_(workload), coordinator_(std::move(coordinator)) {}
  ~Sampler() { Stop(); }

  void Start() {
    thread_ = std::thread([this] {
      transport::ThreadRuntime::ScopedActor actor(runtime_,
                                                  transport::Address::Client(kMainActor + 1));
      transport::Micros next = runtime_.Now();
      while (!stop_.load()) {
        const coordinator::MoveProgress progress = coordinator_->progress();
        samples_.push_back(Sample{.at = runtime_.Now(),
                                  .ops = workload_.ops(),
                                  .bytes_moved = progress.bytes_moved,
                                  .committed = progress.committed,
                                  .in_flight = progress.in_flight});
        next += kSampleInterval;
        const transport::Micros now = runtime_.Now();
        if (next > now) std::this_thread::sleep_for(std::chrono::microseconds(next - now));
      }
    });
  }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // Call after Stop.
  [[nodiscard]] const std::vector<Sample>& samples() const { return samples_; }

 private:
  transport::ThreadRuntime& runtime_;
  const Workload& workload_;
  std::shared_ptr<coordinator::Coordinator> coordinator_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::vector<Sample> samples_;
};

}  // namespace shoal::bench
