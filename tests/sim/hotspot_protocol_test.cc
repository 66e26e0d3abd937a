// The dangerous interleavings of the sharded-field protocol (src/hotspot/field_root.h, R1-R4 and
// P1-P3), staged one by one with the real client on a fault-free SimRuntime: a task is held at a
// chosen request (before it is sent, or after its reply) while other clients resize, compact and
// update, then released. Every scenario is quiet apart from the held task, so the value it reads
// or leaves behind is exact.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "src/client/client.h"
#include "src/hotspot/field_root.h"
#include "src/hotspot/field_spec.h"
#include "src/hotspot/fold.h"
#include "src/hotspot/sharded_field.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/sim_runtime.h"

namespace shoal::hotspot {
namespace {

using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr char kField[] = "likes";
constexpr char kKey[] = "post";

// GatedRuntime forwards to a SimRuntime, and holds the first call that matches the armed
// predicate (before sending it, or after its reply) until Release. The calling task polls with
// Sleep while held, so the simulation keeps running the other tasks. Thread-compatible like the
// simulation: one task runs at a time.
class GatedRuntime final : public transport::Runtime {
 public:
  using Matcher = std::function<bool(const transport::Request&)>;
  enum class Phase : uint8_t { kBeforeSend, kAfterReply };

  explicit GatedRuntime(transport::SimRuntime& sim) : sim_(sim) {}

  void Arm(Phase phase, Matcher matcher) {
    phase_ = phase;
    matcher_ = std::move(matcher);
    held_ = false;
    released_ = false;
  }
  [[nodiscard]] bool held() const { return held_; }
  // Whether a call matched since Arm (held, or held and released).
  [[nodiscard]] bool fired() const { return matcher_ == nullptr; }
  // The request held (or last held).
  [[nodiscard]] const transport::Request& held_request() const { return held_request_; }
  void Release() { released_ = true; }

  [[nodiscard]] Micros Now() const override { return sim_.Now(); }
  [[nodiscard]] Status Sleep(Micros micros) override { return sim_.Sleep(micros); }
  [[nodiscard]] StatusOr<transport::Response> Call(const Address& to, transport::Request request,
                                                   Micros timeout) override {
    const bool match = matcher_ != nullptr && matcher_(request);
    if (match) {
      matcher_ = nullptr;
      held_request_ = request;
    }
    if (match && phase_ == Phase::kBeforeSend) {
      if (Status s = Hold(); !s.ok()) return s;
    }
    auto response = sim_.Call(to, std::move(request), timeout);
    if (match && phase_ == Phase::kAfterReply) {
      if (Status s = Hold(); !s.ok()) return s;
    }
    return response;
  }
  void Spawn(const Address& owner, std::string name, std::function<void()> fn) override {
    sim_.Spawn(owner, std::move(name), std::move(fn));
  }
  void Serve(const Address& self, std::shared_ptr<transport::Service> service) override {
    sim_.Serve(self, std::move(service));
  }
  void Stop(const Address& self) override { sim_.Stop(self); }
  [[nodiscard]] Address Self() const override { return sim_.Self(); }
  [[nodiscard]] bool Alive() const override { return sim_.Alive(); }
  [[nodiscard]] uint64_t RandomU64() override { return sim_.RandomU64(); }
  [[nodiscard]] Status Failpoint(std::string_view name) override { return sim_.Failpoint(name); }

 private:
  [[nodiscard]] Status Hold() {
    held_ = true;
    while (!released_) {
      if (Status s = sim_.Sleep(kMs); !s.ok()) return s;
    }
    held_ = false;
    return OkStatus();
  }

  transport::SimRuntime& sim_;
  Phase phase_ = Phase::kBeforeSend;
  Matcher matcher_;
  transport::Request held_request_;
  bool held_ = false;
  bool released_ = false;
};

// The token of the cell a Get or a write addresses; "" for any other request.
std::string TokenOf(const transport::Request& request) {
  const std::string prefix = CellKey(kKey, kField, "");
  std::string key;
  if (const auto* get = std::get_if<transport::GetRequest>(&request)) {
    key = get->primary_key;
  } else if (const auto* write = std::get_if<transport::WriteRequest>(&request)) {
    key = write->primary_key;
  }
  if (!key.starts_with(prefix) || key == RootKey(kKey, kField)) return "";
  return key.substr(prefix.size());
}

bool IsCellGet(const transport::Request& request) {
  return std::holds_alternative<transport::GetRequest>(request) && !TokenOf(request).empty();
}

bool IsCellCompareAndSet(const transport::Request& request) {
  const auto* write = std::get_if<transport::WriteRequest>(&request);
  return write != nullptr && write->op == transport::WriteOp::kCompareAndSet &&
         !TokenOf(request).empty();
}

bool IsScan(const transport::Request& request) {
  return std::holds_alternative<transport::ScanRequest>(request);
}

FieldSpec SpecOf(std::string_view declaration) {
  auto schema = CollectionSchema::Parse(fmt::format(R"({{"{}": {}}})", kField, declaration),
                                        FoldRegistry::Global());
  EXPECT_TRUE(schema.ok()) << schema.status();
  if (!schema.ok() || schema->Find(kField) == nullptr) return FieldSpec{};
  return *schema->Find(kField);
}

// One scenario's world: a three-node cluster without faults and the hidden collection.
struct Env {
  transport::SimRuntime& sim;
  CollectionId cells;

  // Waits (simulated) until `condition` holds; false after a simulated minute.
  [[nodiscard]] bool WaitFor(const std::function<bool()>& condition) {
    for (int i = 0; i < 60'000 && !condition(); ++i) {
      if (!sim.Sleep(kMs).ok()) return false;
    }
    return condition();
  }
};

// Releases a held task and waits for it on every way out of a scenario (a failed assertion
// included), so that the task never outlives the gate and the flags it uses.
class ReleaseOnExit {
 public:
  ReleaseOnExit(Env& env, GatedRuntime& gate, const bool& done)
      : env_(env), gate_(gate), done_(done) {}
  ~ReleaseOnExit() {
    gate_.Release();
    (void)env_.WaitFor([this] { return done_; });
  }
  ReleaseOnExit(const ReleaseOnExit&) = delete;
  ReleaseOnExit& operator=(const ReleaseOnExit&) = delete;

 private:
  Env& env_;
  GatedRuntime& gate_;
  const bool& done_;
};

// Runs `body` as a task on a fresh cluster and returns once it finished.
void RunScenario(uint64_t seed, const std::function<void(Env&)>& body) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir =
      fmt::format("{}/shoal-hotproto-{}-{}", tmp == nullptr ? "/tmp" : tmp, ::getpid(), seed);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  bool finished = false;
  {
    transport::SimRuntime sim(transport::SimOptions{
        .seed = seed, .min_delay = 100, .max_delay = 3000, .loss = 0, .yield_on_reply = true});
    server::EmbeddedClusterOptions options;
    options.data_dir = dir;
    options.initial_nodes = 3;
    options.buckets = 8;
    options.coordinator.balance_interval = 300 * kMs;
    options.node.store.block_cache_bytes = 1u << 20;
    options.node.store.write_buffer_bytes = 1u << 20;
    options.node.store.background_jobs = 1;
    options.node.store.sync_interval = std::chrono::milliseconds(0);
    server::EmbeddedCluster cluster(sim, options);
    sim.Spawn(Address::Client(1000), "scenario", [&] {
      if (Status s = cluster.Start(); !s.ok()) {
        ADD_FAILURE() << s;
        return;
      }
      client::Client admin(sim);
      auto cells = admin.OpenCollection("hot.cells");
      if (!cells.ok()) {
        ADD_FAILURE() << cells.status();
        return;
      }
      Env env{.sim = sim, .cells = *cells};
      body(env);
      (void)cluster.StopAll();
      finished = true;
    });
    sim.RunUntil(600 * kSecond);
    sim.Shutdown();
    (void)cluster.StopAll();
  }
  std::filesystem::remove_all(dir, ec);
  EXPECT_TRUE(finished) << "the scenario did not finish";
}

StatusOr<FieldRoot> LoadRoot(client::Client& client, CollectionId cells) {
  auto doc = client.Get(cells, RootKey(kKey, kField));
  if (!doc.ok()) return doc.status();
  return FieldRoot::Decode(doc->body);
}

void ApplyN(ShardedFields& fields, const FieldSpec& spec, int n) {
  for (int i = 0; i < n; ++i) {
    auto outcome = fields.Apply(spec, kKey, Value(1), ApplyOptions{});
    ASSERT_TRUE(outcome.ok()) << outcome.status();
  }
}

// Shrinks to one cell and grows back until `token` is no longer an active cell; false if it
// stays after many rounds.
bool RetireToken(ShardedFields& fields, const FieldSpec& spec, const std::string& token,
                 uint32_t grow_to) {
  for (int round = 0; round < 12; ++round) {
    EXPECT_TRUE(fields.Resize(spec, kKey, 1).ok());
    auto root = LoadRoot(fields.client(), fields.collection());
    if (!root.ok()) return false;
    const auto active = root->ActiveTokens();
    if (std::find(active.begin(), active.end(), token) == active.end()) return true;
    EXPECT_TRUE(fields.Resize(spec, kKey, grow_to).ok());
  }
  return false;
}

// A reader held between the root and a cell, or after reading a cell, while cells are sealed,
// absorbed, deleted and (with many resizes) pruned: it must neither lose nor double count.
struct ReaderCase {
  GatedRuntime::Phase phase;
  int resize_rounds;  // shrink-to-1 / grow-to-4 rounds while the reader is held
  int updates_while_held;
};

class HeldReaderTest : public testing::TestWithParam<ReaderCase> {};

TEST_P(HeldReaderTest, NeitherLosesNorDoubleCounts) {
  const ReaderCase param = GetParam();
  RunScenario(7 + static_cast<uint64_t>(param.resize_rounds), [&](Env& env) {
    const FieldSpec spec = SpecOf(R"({"fold": "sum", "shards": 4})");
    client::Client writer_client(env.sim);
    ShardedFields writer(writer_client, env.cells, 1);
    ApplyN(writer, spec, 20);

    // The second cell: a shrink to one cell retires every cell but the first.
    GatedRuntime gate(env.sim);
    gate.Arm(param.phase, [seen = 0](const transport::Request& r) mutable {
      return IsCellGet(r) && ++seen == 2;
    });
    bool read_done = false;
    StatusOr<Value> read = InternalError("not read");
    const ReleaseOnExit release(env, gate, read_done);
    env.sim.Spawn(Address::Client(2), "reader", [&] {
      client::Client client(gate);
      ShardedFields reader(client, env.cells, 2);
      read = reader.Read(spec, kKey, ReadMode::kLatest);
      read_done = true;
    });
    ASSERT_TRUE(env.WaitFor([&] { return gate.held(); }));
    const std::string token = TokenOf(gate.held_request());
    ASSERT_FALSE(token.empty());
    // The held cell goes first, then the others, round after round.
    ASSERT_TRUE(RetireToken(writer, spec, token, 4));
    for (int round = 1; round < param.resize_rounds; ++round) {
      ASSERT_TRUE(writer.Resize(spec, kKey, 1).ok());
      ASSERT_TRUE(writer.Resize(spec, kKey, 4).ok());
    }
    ApplyN(writer, spec, param.updates_while_held);
    auto root = LoadRoot(writer_client, env.cells);
    ASSERT_TRUE(root.ok()) << root.status();
    gate.Release();
    ASSERT_TRUE(env.WaitFor([&] { return read_done; }));
    ASSERT_TRUE(read.ok()) << read.status();
    // Updates acknowledged before the read began are in; those that began after it began may be.
    EXPECT_GE(read->get<int64_t>(), 20) << "lost a cell; root at release: " << root->Encode();
    EXPECT_LE(read->get<int64_t>(), 20 + param.updates_while_held)
        << "double counted a cell; root at release: " << root->Encode();
    auto after = writer.Read(spec, kKey, ReadMode::kLatest);
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(after->get<int64_t>(), 20 + param.updates_while_held);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Interleavings, HeldReaderTest,
    testing::Values(
        // root read; the cell is absorbed and deleted before the reader reads it (missing)
        ReaderCase{
            .phase = GatedRuntime::Phase::kBeforeSend, .resize_rounds = 1, .updates_while_held = 0},
        // the cell's value is read; then it is absorbed into base and deleted
        ReaderCase{
            .phase = GatedRuntime::Phase::kAfterReply, .resize_rounds = 1, .updates_while_held = 0},
        // ... and its absorbed entry is pruned (R4) while the reader is still held
        ReaderCase{
            .phase = GatedRuntime::Phase::kAfterReply, .resize_rounds = 8, .updates_while_held = 5},
        ReaderCase{.phase = GatedRuntime::Phase::kBeforeSend,
                   .resize_rounds = 8,
                   .updates_while_held = 5}));

// An updater that read a cell and is about to CompareAndSet it, while the cell is sealed,
// absorbed and deleted: its update must land in another cell (P3: it never recreates a cell).
TEST(StaleUpdaterTest, HeldCompareAndSetIsRedirected) {
  for (const auto phase : {GatedRuntime::Phase::kAfterReply, GatedRuntime::Phase::kBeforeSend}) {
    RunScenario(phase == GatedRuntime::Phase::kAfterReply ? 31 : 32, [&](Env& env) {
      const FieldSpec spec = SpecOf(R"({"fold": "sum", "shards": 4})");
      client::Client writer_client(env.sim);
      ShardedFields writer(writer_client, env.cells, 1);
      ApplyN(writer, spec, 10);

      // A cell other than the first (which a shrink to one cell keeps): after the updater read
      // it (the version is known), or just before its CompareAndSet.
      auto root = LoadRoot(writer_client, env.cells);
      ASSERT_TRUE(root.ok()) << root.status();
      const std::string keep = root->ActiveTokens().front();
      GatedRuntime gate(env.sim);
      const auto is_step =
          phase == GatedRuntime::Phase::kAfterReply ? IsCellGet : IsCellCompareAndSet;
      gate.Arm(phase, [keep, is_step](const transport::Request& r) {
        return is_step(r) && TokenOf(r) != keep;
      });
      bool done = false;
      int applied = 0;
      Status failed;
      const ReleaseOnExit release(env, gate, done);
      env.sim.Spawn(Address::Client(2), "stale-updater", [&] {
        client::Client client(gate);
        ShardedFields updater(client, env.cells, 2);
        while (!gate.fired() && applied < 64 && failed.ok()) {
          auto outcome = updater.Apply(spec, kKey, Value(1), ApplyOptions{});
          if (outcome.ok()) {
            ++applied;
          } else {
            failed = outcome.status();
          }
        }
        done = true;
      });
      ASSERT_TRUE(env.WaitFor([&] { return gate.held(); }));
      const std::string token = TokenOf(gate.held_request());
      ASSERT_FALSE(token.empty());
      ASSERT_TRUE(RetireToken(writer, spec, token, 3));
      ApplyN(writer, spec, 5);
      gate.Release();
      ASSERT_TRUE(env.WaitFor([&] { return done; }));
      ASSERT_TRUE(failed.ok()) << failed;
      EXPECT_FALSE(writer_client.Get(env.cells, CellKey(kKey, kField, token)).ok())
          << "the retired cell " << token << " was recreated";
      ASSERT_TRUE(writer.Compact(spec, kKey).ok());
      auto value = writer.Read(spec, kKey, ReadMode::kLatest);
      ASSERT_TRUE(value.ok()) << value.status();
      EXPECT_EQ(value->get<int64_t>(), 10 + applied + 5)
          << "the held update was lost or counted twice";
    });
  }
}

// An updater whose cached layout names only retired cells: every update is redirected, none lost.
TEST(StaleUpdaterTest, CachedLayoutOfRetiredCells) {
  RunScenario(41, [&](Env& env) {
    const FieldSpec spec = SpecOf(R"({"fold": "sum", "shards": 2})");
    client::Client stale_client(env.sim);
    ShardedFields stale(stale_client, env.cells, 3);
    ApplyN(stale, spec, 3);  // caches the layout
    auto before = LoadRoot(stale_client, env.cells);
    ASSERT_TRUE(before.ok()) << before.status();

    client::Client resizer_client(env.sim);
    ShardedFields resizer(resizer_client, env.cells, 4);
    // A shrink keeps the first cell; the others of the cached layout go.
    const auto cached = before->ActiveTokens();
    for (size_t i = 1; i < cached.size(); ++i)
      ASSERT_TRUE(RetireToken(resizer, spec, cached[i], 3));
    ApplyN(stale, spec, 10);
    auto value = resizer.Read(spec, kKey, ReadMode::kLatest);
    ASSERT_TRUE(value.ok()) << value.status();
    EXPECT_EQ(value->get<int64_t>(), 13);
    auto snapshot = resizer.Read(spec, kKey, ReadMode::kSnapshot);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_EQ(snapshot->get<int64_t>(), 13);
  });
}

// A dynamic field's reader held after the root read while a compaction absorbs and deletes every
// cell: the query then finds no cell, and the reader must still count them (through base).
TEST(DynamicReaderTest, CompactionBetweenRootAndQuery) {
  for (const auto phase : {GatedRuntime::Phase::kBeforeSend, GatedRuntime::Phase::kAfterReply}) {
    RunScenario(phase == GatedRuntime::Phase::kBeforeSend ? 51 : 52, [&](Env& env) {
      const FieldSpec spec = SpecOf(R"({"fold": "sum"})");
      client::Client writer_client(env.sim);
      ShardedFields writer(writer_client, env.cells, 1);
      ApplyN(writer, spec, 12);

      GatedRuntime gate(env.sim);
      gate.Arm(phase, IsScan);
      bool done = false;
      StatusOr<Value> read = InternalError("not read");
      const ReleaseOnExit release(env, gate, done);
      env.sim.Spawn(Address::Client(2), "reader", [&] {
        client::Client client(gate);
        ShardedFields reader(client, env.cells, 2);
        read = reader.Read(spec, kKey, ReadMode::kLatest);
        done = true;
      });
      ASSERT_TRUE(env.WaitFor([&] { return gate.held(); }));
      ASSERT_TRUE(writer.Compact(spec, kKey).ok());
      // More compactions and updates: enough root writes to prune what the first one absorbed.
      for (uint64_t i = 0; i < kPruneLag + 2; ++i) {
        ApplyN(writer, spec, 1);
        ASSERT_TRUE(writer.Compact(spec, kKey).ok());
      }
      gate.Release();
      ASSERT_TRUE(env.WaitFor([&] { return done; }));
      ASSERT_TRUE(read.ok()) << read.status();
      EXPECT_GE(read->get<int64_t>(), 12) << "cells absorbed during the read were lost";
      EXPECT_LE(read->get<int64_t>(), 12 + static_cast<int64_t>(kPruneLag) + 2)
          << "cells absorbed during the read were counted twice";
      auto after = writer.Read(spec, kKey, ReadMode::kLatest);
      ASSERT_TRUE(after.ok()) << after.status();
      EXPECT_EQ(after->get<int64_t>(), 12 + static_cast<int64_t>(kPruneLag) + 2);
    });
  }
}

// A compactor of a dynamic field held after it read (sealed) a cell, while another compactor
// absorbs, deletes and, after kPruneLag root writes, prunes that cell: when the first one goes
// on, the cell is neither in the root's absorbed list nor stored, and it must not fold the value
// it read into base a second time.
TEST(SlowCompactorTest, DynamicCellAbsorbedAndPrunedMeanwhile) {
  RunScenario(61, [&](Env& env) {
    const FieldSpec spec = SpecOf(R"({"fold": "sum"})");
    client::Client writer_client(env.sim);
    ShardedFields writer(writer_client, env.cells, 1);
    ApplyN(writer, spec, 6);

    GatedRuntime gate(env.sim);
    gate.Arm(GatedRuntime::Phase::kAfterReply, IsCellGet);
    bool done = false;
    Status compacted;
    const ReleaseOnExit release(env, gate, done);
    env.sim.Spawn(Address::Client(2), "slow-compactor", [&] {
      client::Client client(gate);
      ShardedFields compactor(client, env.cells, 2);
      compacted = compactor.Compact(spec, kKey);
      done = true;
    });
    ASSERT_TRUE(env.WaitFor([&] { return gate.held(); }));
    ASSERT_TRUE(writer.Compact(spec, kKey).ok());
    for (uint64_t i = 0; i < kPruneLag; ++i) {
      ApplyN(writer, spec, 1);
      ASSERT_TRUE(writer.Compact(spec, kKey).ok());
    }
    const int64_t expected = 6 + static_cast<int64_t>(kPruneLag);
    auto before = writer.Read(spec, kKey, ReadMode::kLatest);
    ASSERT_TRUE(before.ok()) << before.status();
    EXPECT_EQ(before->get<int64_t>(), expected);
    gate.Release();
    ASSERT_TRUE(env.WaitFor([&] { return done; }));
    EXPECT_TRUE(compacted.ok()) << compacted;
    auto root = LoadRoot(writer_client, env.cells);
    ASSERT_TRUE(root.ok()) << root.status();
    auto after = writer.Read(spec, kKey, ReadMode::kLatest);
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(after->get<int64_t>(), expected)
        << "the held compactor absorbed cell " << TokenOf(gate.held_request())
        << " a second time after its absorbed entry was pruned; root: " << root->Encode();
  });
}

// The pure model: the transitions the protocol relies on, without I/O.
// Cells stored by an older version, in the body format before the compact codec (cell_state.h):
// read, updated (rewritten compactly), sealed and absorbed, and found by the owner query.
TEST(OldCellFormatTest, StoredOldBodiesAreReadUpdatedAndAbsorbed) {
  RunScenario(61, [&](Env& env) {
    const FieldSpec spec = SpecOf(R"({"fold": "sum", "shards": 2})");
    client::Client client(env.sim);
    ShardedFields fields(client, env.cells, 7);
    ApplyN(fields, spec, 1);  // creates the two cells
    auto root = LoadRoot(client, env.cells);
    ASSERT_TRUE(root.ok()) << root.status();
    const std::vector<std::string> tokens = root->ActiveTokens();
    ASSERT_EQ(tokens.size(), 2u);
    const std::string old_bodies[] = {R"({"n":7,"v":40})", R"({"n":2,"v":2})"};
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string key = CellKey(kKey, kField, tokens[i]);
      auto doc = client.Get(env.cells, key);
      ASSERT_TRUE(doc.ok()) << doc.status();
      ASSERT_TRUE(client.CompareAndSet(env.cells, key, doc->version, old_bodies[i]).ok());
    }
    auto read = [&](std::string_view pk, const FieldSpec& s, ReadMode mode) -> int64_t {
      auto value = fields.Read(s, pk, mode);
      EXPECT_TRUE(value.ok()) << value.status();
      return value.ok() ? value->get<int64_t>() : -1;
    };
    EXPECT_EQ(read(kKey, spec, ReadMode::kLatest), 42);
    EXPECT_EQ(read(kKey, spec, ReadMode::kSnapshot), 42);
    auto counted = fields.CountUpdates(spec, kKey);
    ASSERT_TRUE(counted.ok()) << counted.status();
    EXPECT_EQ(counted->updates, 9u);
    // A shrink keeps the first cell: the second, still in the old format, is sealed and absorbed.
    ASSERT_TRUE(RetireToken(fields, spec, tokens[1], 2));
    EXPECT_EQ(read(kKey, spec, ReadMode::kLatest), 42);
    ApplyN(fields, spec, 5);  // the first cell may take some: read old, written compact
    EXPECT_EQ(read(kKey, spec, ReadMode::kLatest), 47);
    EXPECT_EQ(read(kKey, spec, ReadMode::kSnapshot), 47);

    // A dynamic field's old cell (sealed, with its owner) inserted beside a new one.
    const FieldSpec dynamic = SpecOf(R"({"fold": "sum"})");
    constexpr char kLegacy[] = "legacy";
    ASSERT_TRUE(fields.Apply(dynamic, kLegacy, Value(2), ApplyOptions{}).ok());
    const std::string old_dynamic =
        fmt::format(R"({{"n":1,"owner":"{}","sealed":true,"v":3}})", OwnerOf(kLegacy, kField));
    ASSERT_TRUE(client.Insert(env.cells, CellKey(kLegacy, kField, "c-old"), old_dynamic).ok());
    EXPECT_EQ(read(kLegacy, dynamic, ReadMode::kLatest), 5);
    ASSERT_TRUE(fields.Compact(dynamic, kLegacy).ok());
    EXPECT_EQ(read(kLegacy, dynamic, ReadMode::kLatest), 5);
  });
}

TEST(FieldRootModelTest, AbsorbTwiceIsHarmlessAndPruneWaitsForTheLag) {
  const Fold& sum = **FoldRegistry::Global().Find("sum");
  FieldRoot root = FieldRoot::Empty(Value(0));
  ASSERT_TRUE(root.AddCells({"a", "b"}).ok());
  ASSERT_TRUE(root.Retire({"a"}).ok());
  const std::vector<SealedCell> sealed = {SealedCell{.token = "a", .value = Value(5)}};
  ASSERT_TRUE(root.Absorb(sum, sealed).ok());
  ASSERT_TRUE(root.Absorb(sum, sealed).ok());  // a second compactor repeats the step
  EXPECT_EQ(root.base(), Value(5));
  EXPECT_TRUE(root.IsAbsorbed("a"));
  EXPECT_FALSE(root.HasCell("a"));
  EXPECT_TRUE(root.CheckInvariants().ok());
  root.RecordDeleted({"a"});
  EXPECT_TRUE(root.IsAbsorbed("a")) << "pruned before kPruneLag root writes (R4)";
  EXPECT_TRUE(root.UndeletedAbsorbed().empty());
  for (uint64_t i = 0; i < kPruneLag; ++i) {
    ASSERT_TRUE(root.AddCells({fmt::format("c{}", i)}).ok());
  }
  root.RecordDeleted({});
  EXPECT_FALSE(root.IsAbsorbed("a")) << "never pruned";
  EXPECT_TRUE(root.CheckInvariants().ok());
  auto decoded = FieldRoot::Decode(root.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->Encode(), root.Encode());
}

TEST(FieldRootModelTest, CheckInvariantsRejectsBrokenRoots) {
  // R1: a token both listed and absorbed.
  auto both = FieldRoot::Decode(R"({"base": 1, "seq": 3, "cells": [{"t": "a", "active": true}],)"
                                R"( "absorbed": [{"t": "a", "at": 2}]})");
  if (both.ok()) {
    EXPECT_FALSE(both->CheckInvariants().ok());
  }
  // R3: absorbed at a seq the root has not reached.
  auto future =
      FieldRoot::Decode(R"({"base": 1, "seq": 3, "cells": [], "absorbed": [{"t": "a", "at": 9}]})");
  if (future.ok()) {
    EXPECT_FALSE(future->CheckInvariants().ok());
  }
  // R1: a token listed twice.
  auto twice = FieldRoot::Decode(
      R"({"base": 0, "seq": 2, "cells": [{"t": "a", "active": true}, {"t": "a", "active": true}],)"
      R"( "absorbed": []})");
  if (twice.ok()) {
    EXPECT_FALSE(twice->CheckInvariants().ok());
  }
}

}  // namespace
}  // namespace shoal::hotspot
