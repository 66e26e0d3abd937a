#include "tests/cluster/workload.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

namespace shoal::cluster_test {
namespace {

std::string ValueOf(const std::string& key, int64_t sequence) {
  return fmt::format(R"({{"key": "{}", "seq": {}, "pad": "{}"}})", key, sequence,
                     std::string(64, 'x'));
}

// The state a read shows: the document's sequence number, or -1 (Workload's kAbsent) when absent.
StatusOr<int64_t> ReadState(Collection& collection, const std::string& key) {
  auto doc = collection.Get(key);
  if (!doc.ok()) {
    if (doc.status().code() == StatusCode::kNotFound) return int64_t{-1};
    return doc.status();
  }
  auto json = nlohmann::json::parse(doc->json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.contains("seq")) {
    return InternalError(fmt::format("{} holds {}", key, doc->json));
  }
  return json["seq"].get<int64_t>();
}

}  // namespace

Workload::Workload(std::string uri, ConnectOptions connect, int threads, int keys_per_thread)
    : uri_(std::move(uri)),
      connect_(std::move(connect)),
      threads_(threads),
      keys_per_thread_(keys_per_thread) {
  keys_.resize(threads);
  for (int t = 0; t < threads; ++t) {
    for (int k = 0; k < keys_per_thread; ++k) {
      keys_[t].push_back(Key{.name = fmt::format("t{}-k{}", t, k),
                             .acknowledged = kAbsent,
                             .uncertain = {},
                             .deleted = false});
    }
  }
}

Workload::~Workload() { Stop(); }

Status Workload::Start() {
  auto db = Database::Connect(uri_, connect_);
  if (!db.ok()) return db.status();
  db_ = std::move(*db);
  for (int t = 0; t < threads_; ++t) writers_.emplace_back([this, t] { Run(t); });
  return OkStatus();
}

void Workload::Stop() {
  stop_ = true;
  for (auto& writer : writers_) writer.join();
  writers_.clear();
}

void Workload::Run(int thread) {
  auto collection = db_->GetCollection("faults");
  while (!collection.ok() && !stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    collection = db_->GetCollection("faults");
  }
  if (!collection.ok()) return;
  std::mt19937_64 random(static_cast<uint64_t>(thread) * 7919 + 1);
  // Sequence numbers are unique over threads: thread t writes t, t + threads, ...
  int64_t sequence = thread;
  while (!stop_) {
    Key& key = keys_[thread][random() % keys_[thread].size()];
    // Mostly writes; a delete in ten, of a key that exists.
    const bool remove = key.acknowledged != kAbsent && random() % 10 == 0;
    int64_t state = kAbsent;
    StatusOr<uint64_t> result = uint64_t{0};
    if (remove) {
      result = collection->Delete(key.name);
    } else {
      sequence += threads_;
      state = sequence;
      result = collection->Upsert(key.name, ValueOf(key.name, state));
    }
    if (result.ok() || (remove && result.status().code() == StatusCode::kNotFound)) {
      key.acknowledged = state;
      key.deleted = remove;
      key.uncertain.clear();
      ++acknowledged_;
    } else {
      // Unknown outcome (or refused): the write may or may not have happened.
      key.uncertain.insert(state);
      ++uncertain_;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

VerifyResult Workload::Verify(Database* db, int seconds) {
  VerifyResult result;
  std::unique_ptr<Database> own;
  if (db == nullptr) {
    auto connected = Database::Connect(uri_, connect_);
    if (!connected.ok()) {
      result.first_problem = connected.status().ToString();
      result.unreadable = 1;
      return result;
    }
    own = std::move(*connected);
    db = own.get();
  }
  auto collection = db->GetCollection("faults");
  if (!collection.ok()) {
    result.first_problem = collection.status().ToString();
    result.unreadable = 1;
    return result;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto note = [&](const std::string& problem) {
    if (result.first_problem.empty()) result.first_problem = problem;
  };
  for (const auto& per_thread : keys_) {
    for (const Key& key : per_thread) {
      ++result.keys;
      StatusOr<int64_t> state = ReadState(*collection, key.name);
      while (!state.ok() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        state = ReadState(*collection, key.name);
      }
      if (!state.ok()) {
        ++result.unreadable;
        note(fmt::format("{}: {}", key.name, state.status().ToString()));
        continue;
      }
      if (*state == key.acknowledged || key.uncertain.contains(*state)) continue;
      if (key.deleted && *state != kAbsent) {
        ++result.resurrected_deletes;
        note(fmt::format("{}: deleted, reads seq {}", key.name, *state));
      } else {
        ++result.lost_writes;
        note(fmt::format("{}: acknowledged seq {}, reads {}", key.name, key.acknowledged, *state));
      }
    }
  }
  return result;
}

}  // namespace shoal::cluster_test
