// Crash test for BucketStore (the RocksDB db_stress pattern).
//
// A parent process repeatedly starts a child that applies random operations to a store, kills it
// with SIGKILL at a random moment, reopens the store and compares it with an expected-state file.
// The file is a shared memory mapping that the child updates around every operation, so it
// survives the kill. For each key it holds the acknowledged state and, while an operation is in
// flight, the state before and after it: after a crash a key must show its acknowledged state, or
// for the operation in flight either the state before or the state after (all keys of a batch the
// same way). The parent also checks that the recovered local directory still covers the hash
// space, and that the version clock restarts above every version seen.
//
//   storage_stress --dir DIR [--seconds 20] [--sync every|periodic] [--seed N] [--keys 2000]
//                  [--threads 2] [--min-kill-ms 30] [--max-kill-ms 300]
//
// Exit status 0 when every verification passed.

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "src/common/random.h"
#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kCollection{1};
constexpr uint64_t kTombstoneState = 1;  // states: 0 nothing stored, 1 tombstone, 2*id live
constexpr int kMaxBatch = 8;

struct Flags {
  std::string dir;
  std::string mode = "parent";
  int seconds = 20;
  std::string sync = "every";
  uint64_t seed = 0;
  int keys = 2000;
  int threads = 2;
  int min_kill_ms = 30;
  int max_kill_ms = 300;
};

// One key's expected state, written only by the thread that owns the key, in this order:
//   before an operation: prior = committed, pending_state, acked_version = 0, pending_valid = op;
//   on its acknowledgement: acked_version (one store: the ack is recorded atomically), then
//   committed_state, committed_version, and pending_valid = 0.
struct Slot {
  std::atomic<uint64_t> committed_state;
  std::atomic<uint64_t> committed_version;
  std::atomic<uint64_t> prior_state;
  std::atomic<uint64_t> prior_version;
  std::atomic<uint64_t> pending_state;
  std::atomic<uint64_t> acked_version;
  std::atomic<uint64_t> pending_valid;  // 0, or the id of the thread's operation in flight
};

void Begin(Slot& s, uint64_t next_state, uint64_t op) {
  s.prior_state = s.committed_state.load();
  s.prior_version = s.committed_version.load();
  s.pending_state = next_state;
  s.acked_version = 0;
  s.pending_valid = op;
}

void Acknowledge(Slot& s, uint64_t version) {
  s.acked_version = version;
  s.committed_state = s.pending_state.load();
  s.committed_version = version;
  s.pending_valid = 0;
}

struct ThreadRecord {
  std::atomic<uint64_t> op;  // increasing operation id
  std::atomic<uint64_t> batch_size;
  std::atomic<uint64_t> batch_keys[kMaxBatch];
};

struct Header {
  std::atomic<uint64_t> next_value_id;
  std::atomic<uint64_t> next_bucket_id;
  std::atomic<uint64_t> committed_buckets;
  std::atomic<uint64_t> pending_buckets;  // 0 or committed_buckets + 1 while a split is in flight
  ThreadRecord threads[16];
};

struct ExpectedState {
  Header* header = nullptr;
  Slot* slots = nullptr;
  size_t bytes = 0;
};

StatusOr<ExpectedState> MapExpected(const std::string& path, int keys, bool create) {
  const size_t bytes = sizeof(Header) + sizeof(Slot) * static_cast<size_t>(keys);
  const int fd = open(path.c_str(), create ? (O_RDWR | O_CREAT | O_TRUNC) : O_RDWR, 0644);
  if (fd < 0) return InternalError(fmt::format("open {}", path));
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return InternalError("ftruncate");
  }
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return InternalError("mmap");
  ExpectedState state{.header = static_cast<Header*>(map),
                      .slots = reinterpret_cast<Slot*>(static_cast<char*>(map) + sizeof(Header)),
                      .bytes = bytes};
  if (create) state.header->next_bucket_id = 2;
  return state;
}

std::string KeyOf(int k) { return fmt::format("key{:06}", k); }
std::string BodyOf(int k, uint64_t id) { return fmt::format(R"({{"k":{},"id":{}}})", k, id); }

StoreOptions OptionsFor(const Flags& flags) {
  return StoreOptions{
      .path = flags.dir + "/db",
      .sync = flags.sync == "every" ? SyncPolicy::kEveryWrite : SyncPolicy::kPeriodic,
      .sync_interval = std::chrono::milliseconds(0),
      .write_buffer_bytes = 1u << 20,
      .lock_stripes = 64,
      .version_block = 100};
}

[[noreturn]] void Die(const std::string& message) {
  fmt::print(stderr, "storage_stress child: {}\n", message);
  std::fflush(stderr);
  _exit(3);
}

// --- child ---

void ChildThread(BucketStore& store, ExpectedState& expected, const Flags& flags, int t) {
  Random rng(flags.seed * 7919 + static_cast<uint64_t>(t) + 1 + expected.header->threads[t].op);
  ThreadRecord& rec = expected.header->threads[t];
  std::vector<int> owned;
  for (int k = t; k < flags.keys; k += flags.threads) owned.push_back(k);
  while (true) {
    const uint64_t op = rec.op.fetch_add(1) + 1;
    const uint64_t dice = rng.Uniform(100);
    if (dice < 8) {  // a batch of upserts over distinct owned keys
      const int n = static_cast<int>(rng.Range(2, kMaxBatch));
      std::vector<int> keys;
      while (static_cast<int>(keys.size()) < n) {
        const int k = owned[rng.Uniform(owned.size())];
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
      std::vector<std::string> pks, bodies;
      std::vector<uint64_t> ids;
      std::vector<Mutation> batch;
      for (int k : keys) {
        ids.push_back(expected.header->next_value_id.fetch_add(1) + 1);
        pks.push_back(KeyOf(k));
        bodies.push_back(BodyOf(k, ids.back()));
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        Begin(expected.slots[keys[i]], 2 * ids[i], op);
        rec.batch_keys[i] = static_cast<uint64_t>(keys[i]);
        batch.push_back({.kind = MutationKind::kUpsert,
                         .collection = kCollection,
                         .primary_key = pks[i],
                         .body = bodies[i]});
      }
      rec.batch_size = keys.size();
      auto results = store.ApplyBatch(batch);
      if (!results.ok()) Die(fmt::format("batch: {}", results.status().ToString()));
      for (size_t i = 0; i < keys.size(); ++i) {
        Acknowledge(expected.slots[keys[i]], (*results)[i].version);
      }
      rec.batch_size = 0;
      continue;
    }
    if (t == 0 && dice < 9) {  // split a bucket (metadata only)
      std::vector<BucketEntry> buckets = store.ListBuckets();
      const BucketEntry& b = buckets[rng.Uniform(buckets.size())];
      const uint64_t width =
          b.range.end_is_max() ? ~b.range.begin() : b.range.end() - b.range.begin();
      if (width < 4) continue;
      const uint64_t at = b.range.begin() + 1 + rng.Uniform(width - 2);
      const BucketId id(static_cast<uint32_t>(expected.header->next_bucket_id.fetch_add(1)));
      expected.header->pending_buckets = expected.header->committed_buckets + 1;
      Status s = store.SplitBucket(b.id, at, id).status();
      if (!s.ok()) Die(fmt::format("split: {}", s.ToString()));
      expected.header->committed_buckets = expected.header->committed_buckets + 1;
      expected.header->pending_buckets = 0;
      continue;
    }
    if (t == 0 && dice < 10) {
      if (Status s = store.Flush(); !s.ok()) Die(fmt::format("flush: {}", s.ToString()));
      continue;
    }
    const int k = owned[rng.Uniform(owned.size())];
    Slot& s = expected.slots[k];
    const uint64_t current = s.committed_state.load();
    const bool live = current >= 2;
    const uint64_t id = expected.header->next_value_id.fetch_add(1) + 1;
    const std::string pk = KeyOf(k), body = BodyOf(k, id);
    MutationKind kind = MutationKind::kUpsert;
    if (dice < 40)
      kind = MutationKind::kInsert;
    else if (dice < 60)
      kind = MutationKind::kUpdate;
    else if (dice < 80)
      kind = MutationKind::kDelete;
    const bool should_fail =
        (kind == MutationKind::kInsert && live) ||
        ((kind == MutationKind::kUpdate || kind == MutationKind::kDelete) && !live);
    const uint64_t next_state = kind == MutationKind::kDelete ? kTombstoneState : 2 * id;
    if (!should_fail) Begin(s, next_state, op);
    auto result =
        store.Apply({.kind = kind, .collection = kCollection, .primary_key = pk, .body = body});
    if (should_fail) {
      const ErrorReason want =
          kind == MutationKind::kInsert ? ErrorReason::kDuplicate : ErrorReason::kNotFound;
      if (!Is(result.status(), want)) {
        Die(fmt::format("{} {}: expected {}, got {}", MutationKindName(kind), pk,
                        ErrorReasonName(want), result.status().ToString()));
      }
      continue;
    }
    if (!result.ok())
      Die(fmt::format("{} {}: {}", MutationKindName(kind), pk, result.status().ToString()));
    Acknowledge(s, result->version);
  }
}

int RunChild(const Flags& flags) {
  auto expected = MapExpected(flags.dir + "/expected", flags.keys, /*create=*/false);
  if (!expected.ok()) Die(expected.status().ToString());
  auto store = BucketStore::Open(OptionsFor(flags));
  if (!store.ok()) Die(store.status().ToString());
  std::vector<std::thread> threads;
  for (int t = 0; t < flags.threads; ++t) {
    threads.emplace_back([&, t] { ChildThread(**store, *expected, flags, t); });
  }
  for (auto& th : threads) th.join();  // never: the parent kills us
  return 0;
}

// --- parent ---

int Verify(const Flags& flags, ExpectedState& expected, int round) {
  auto opened = BucketStore::Open(OptionsFor(flags));
  if (!opened.ok()) {
    fmt::print(stderr, "round {}: reopen failed: {}\n", round, opened.status().ToString());
    return 1;
  }
  BucketStore& store = **opened;
  int errors = 0;
  struct Resolved {
    int key;
    uint64_t state;
    uint64_t version;
  };
  std::vector<Resolved> resolved;
  uint64_t max_version = 0;
  auto fail = [&](const std::string& what) {
    if (++errors <= 10) fmt::print(stderr, "round {}: {}\n", round, what);
  };
  for (int k = 0; k < flags.keys; ++k) {
    Slot& s = expected.slots[k];
    auto doc = store.Get(kCollection, KeyOf(k), {.include_tombstones = true});
    uint64_t state = 0, version = 0;
    if (doc.ok()) {
      version = doc->version;
      state = doc->tombstone ? kTombstoneState : 0;
      if (!doc->tombstone) {
        const size_t at = doc->body.find("\"id\":");
        state = 2 * std::stoull(doc->body.substr(at + 5));
      }
    } else if (!Is(doc.status(), ErrorReason::kNotFound)) {
      fail(fmt::format("key {}: {}", k, doc.status().ToString()));
      continue;
    }
    max_version = std::max({max_version, version, s.committed_version.load()});
    bool ok = false;
    std::string want;
    if (s.pending_valid == 0) {
      ok = state == s.committed_state && version == s.committed_version;
      want = fmt::format("(state {}, v{})", s.committed_state.load(), s.committed_version.load());
    } else if (s.acked_version != 0) {
      ok = state == s.pending_state && version == s.acked_version;
      want = fmt::format("acknowledged (state {}, v{})", s.pending_state.load(),
                         s.acked_version.load());
    } else {
      ok = (state == s.prior_state && version == s.prior_version) ||
           (state == s.pending_state && version > s.prior_version);
      want = fmt::format("(state {}, v{}) or in flight (state {}, v>{})", s.prior_state.load(),
                         s.prior_version.load(), s.pending_state.load(), s.prior_version.load());
    }
    if (!ok)
      fail(fmt::format("key {}: stored (state {}, v{}), expected {}", k, state, version, want));
    // Resolve the operation that was in flight: the next child starts from what is stored.
    resolved.push_back({k, state, version});
  }
  // Batches in flight are all-or-nothing.
  for (int t = 0; t < flags.threads; ++t) {
    ThreadRecord& rec = expected.header->threads[t];
    const uint64_t n = rec.batch_size;
    int applied = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const int k = static_cast<int>(rec.batch_keys[i]);
      auto doc = store.Get(kCollection, KeyOf(k));
      applied += doc.ok() && doc->body == BodyOf(k, expected.slots[k].pending_state / 2);
    }
    if (applied != 0 && applied != static_cast<int>(n)) {
      fail(fmt::format("thread {}: batch of {} applied to {} keys", t, n, applied));
    }
  }
  // The directory covers the hash space, with the expected number of buckets.
  std::vector<BucketEntry> buckets = store.ListBuckets();
  uint64_t next = 0;
  bool complete = false;
  for (const BucketEntry& b : buckets) {
    if (b.range.begin() != next || complete) fail("directory has a gap or overlap");
    complete = b.range.end_is_max();
    next = b.range.end();
  }
  if (!complete) fail("directory does not reach 2^64");
  const uint64_t want = expected.header->committed_buckets + 1;
  if (buckets.size() != want &&
      !(expected.header->pending_buckets != 0 && buckets.size() == want + 1)) {
    fail(fmt::format("{} buckets, expected {}", buckets.size(), want));
  }
  // The clock restarts above every version seen.
  if (store.LastVersion() < max_version) {
    fail(fmt::format("clock at {} below stored version {}", store.LastVersion(), max_version));
  }
  if (Status s = store.Close(); !s.ok()) fail(s.ToString());
  for (const Resolved& r : resolved) {
    Slot& s = expected.slots[r.key];
    s.committed_state = r.state;
    s.committed_version = r.version;
    s.pending_valid = 0;
  }
  for (int t = 0; t < flags.threads; ++t) expected.header->threads[t].batch_size = 0;
  if (expected.header->pending_buckets != 0) {
    expected.header->committed_buckets = buckets.size() - 1;
    expected.header->pending_buckets = 0;
  }
  return errors;
}

int RunParent(const Flags& flags) {
  std::filesystem::create_directories(flags.dir);
  auto expected = MapExpected(flags.dir + "/expected", flags.keys, /*create=*/true);
  if (!expected.ok()) return fmt::print(stderr, "{}\n", expected.status().ToString()), 1;
  {
    auto store = BucketStore::Open(OptionsFor(flags));
    if (!store.ok()) return fmt::print(stderr, "{}\n", store.status().ToString()), 1;
    Status s = (*store)->CreateCollection({.id = kCollection, .name = "stress"});
    if (s.ok()) s = (*store)->AddBucket({.id = BucketId(1), .range = PointRange::All()});
    if (s.ok()) s = (*store)->Close();
    if (!s.ok()) return fmt::print(stderr, "{}\n", s.ToString()), 1;
  }
  Random rng(flags.seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(flags.seconds);
  int rounds = 0, errors = 0;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  while (std::chrono::steady_clock::now() < deadline && errors == 0) {
    ++rounds;
    const pid_t pid = fork();
    if (pid == 0) {
      std::vector<std::string> args = {self,
                                       "--mode=child",
                                       "--dir=" + flags.dir,
                                       "--sync=" + flags.sync,
                                       fmt::format("--seed={}", flags.seed + rounds),
                                       fmt::format("--keys={}", flags.keys),
                                       fmt::format("--threads={}", flags.threads)};
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(self.c_str(), argv.data());
      _exit(127);
    }
    const auto delay = rng.Range(static_cast<uint64_t>(flags.min_kill_ms),
                                 static_cast<uint64_t>(flags.max_kill_ms));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status)) {
      fmt::print(stderr, "round {}: child exited with {} before the kill\n", rounds,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      ++errors;
      break;
    }
    errors += Verify(flags, *expected, rounds);
  }
  uint64_t ops = 0;
  for (int t = 0; t < flags.threads; ++t) ops += expected->header->threads[t].op;
  fmt::print("storage_stress: sync={} seed={} rounds={} operations={} buckets={} errors={}\n",
             flags.sync, flags.seed, rounds, ops, expected->header->committed_buckets + 1, errors);
  munmap(expected->header, expected->bytes);
  return errors == 0 ? 0 : 1;
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  flags.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    if (name == "--dir")
      flags.dir = value;
    else if (name == "--mode")
      flags.mode = value;
    else if (name == "--seconds")
      flags.seconds = std::stoi(value);
    else if (name == "--sync")
      flags.sync = value;
    else if (name == "--seed")
      flags.seed = std::stoull(value);
    else if (name == "--keys")
      flags.keys = std::stoi(value);
    else if (name == "--threads")
      flags.threads = std::min(16, std::stoi(value));
    else if (name == "--min-kill-ms")
      flags.min_kill_ms = std::stoi(value);
    else if (name == "--max-kill-ms")
      flags.max_kill_ms = std::stoi(value);
    else {
      fmt::print(stderr, "unknown flag {}\n", arg);
      std::exit(2);
    }
  }
  if (flags.dir.empty() || (flags.sync != "every" && flags.sync != "periodic")) {
    fmt::print(stderr, "usage: storage_stress --dir DIR [--sync every|periodic] ...\n");
    std::exit(2);
  }
  return flags;
}

}  // namespace
}  // namespace shoal::storage

int main(int argc, char** argv) {
  const shoal::storage::Flags flags = shoal::storage::ParseFlags(argc, argv);
  if (flags.mode == "child") return shoal::storage::RunChild(flags);
  return shoal::storage::RunParent(flags);
}
