#pragma once

// Workload: writer threads of one network client that upsert and delete keys of their own with
// a unique value per write, and remember, per key, the last acknowledged state and every write
// whose outcome is unknown since (an error other than a definite answer). Verify reads every
// key back and counts lost acknowledged writes and resurrected deletes: a key may hold its last
// acknowledged state or the state of a later write of unknown outcome, nothing else.
//
// Thread-safety: Start and Stop/Verify are called by one thread; the writers are internal.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"

namespace shoal::cluster_test {

struct VerifyResult {
  uint64_t keys = 0;
  uint64_t lost_writes = 0;          // a key reads an older state than its acknowledged one
  uint64_t resurrected_deletes = 0;  // an acknowledged delete reads back as a document
  uint64_t unreadable = 0;           // keys that did not answer within the deadline
  std::string first_problem;
};

class Workload {
 public:
  // `uri`: the cluster, reached with `connect`; `threads` writers of `keys_per_thread` keys each.
  Workload(std::string uri, ConnectOptions connect, int threads, int keys_per_thread);
  ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  [[nodiscard]] Status Start();
  void Stop();
  [[nodiscard]] uint64_t acknowledged() const { return acknowledged_.load(); }
  [[nodiscard]] uint64_t uncertain() const { return uncertain_.load(); }
  // Reads every key through `db` (or a new client), retrying each for up to `seconds`.
  [[nodiscard]] VerifyResult Verify(Database* db, int seconds);

 private:
  // A key's state: a value sequence number, or kAbsent.
  static constexpr int64_t kAbsent = -1;
  struct Key {
    std::string name;
    int64_t acknowledged = kAbsent;
    std::set<int64_t> uncertain;  // states written since, outcome unknown
    bool deleted = false;         // the acknowledged state is from a delete
  };
  void Run(int thread);

  const std::string uri_;
  const ConnectOptions connect_;
  const int threads_;
  const int keys_per_thread_;
  std::unique_ptr<Database> db_;
  std::vector<std::vector<Key>> keys_;  // per thread; read by Verify after Stop
  std::vector<std::thread> writers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> acknowledged_{0};
  std::atomic<uint64_t> uncertain_{0};
};

}  // namespace shoal::cluster_test
