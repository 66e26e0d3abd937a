// The replicated harness of the interleaving explorer (interleaving_explorer.h, "the replicated
// harness"; docs/design/interleavings.md, "Replicated buckets"): one write of a key, and
// optionally a get, against the removal of a backup and the failover of the primary of its
// bucket at K = 3 (docs/design/replication.md §4.1, §4.2), with the crash point itself a choice.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/client/client.h"
#include "src/common/point.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/point_ranges.h"
#include "src/transport/sim_runtime.h"
#include "tests/sim/interleaving_explorer.h"
#include "tests/sim/interleaving_register.h"

namespace shoal::sim {

std::string_view ToString(ReplicaFault fault) {
  switch (fault) {
    case ReplicaFault::kRemoveBackup:
      return "remove-backup";
    case ReplicaFault::kFailover:
      return "failover";
    case ReplicaFault::kRemoveThenFailover:
      return "remove-then-failover";
  }
  return "?";
}

std::string ReplicationConfig::DebugString() const {
  return fmt::format("{{scenario {}, write {}{}, fault {}, reorder budget {}, reply yields {}}}",
                     std::string(ToString(scenario)), std::string(ToString(write)),
                     with_get ? " + get" : "", std::string(ToString(fault)), reorder_budget,
                     yield_on_reply);
}

namespace {

using transport::Address;
using transport::Micros;

constexpr char kCollection[] = "docs";
constexpr char kWrittenValue[] = R"({"v":"a"})";
constexpr char kHarnessTask[] = "harness";
constexpr std::string_view kOpTasks[2] = {"op.write", "op.get"};
// The tasks whose turns are explored against each other: the operations and the replication
// messages (Runtime::CallAsync names its tasks "call-async-<callee>").
constexpr std::string_view kCallAsyncPrefix = "call-async-";
constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr Micros kPoll = 1000;  // the harness polls at a later time than every due task
constexpr Micros kNever = Micros{1} << 50;
constexpr NodeId kN1{1};
constexpr NodeId kN2{2};
constexpr NodeId kN3{3};
constexpr std::array<NodeId, 3> kNodes = {kN1, kN2, kN3};

// What the harness observes between turns; a crash point or a scheduling choice is offered only
// once it changed (a crash after a turn that changed none of it is the crash before that turn).
struct Observed {
  uint64_t coordinator_epoch = 0;
  std::array<uint64_t, 3> node_epochs{};
  std::array<storage::ReplicaPosition, 3> positions{};
  std::array<bool, 3> alive{};
  int ops_finished = 0;
  uint64_t progress = 0;  // turns of explored tasks that were not a poll
  bool operator==(const Observed&) const = default;
};

// State of one run. Only one simulated task (or the driving thread between events) runs at a
// time, so plain fields suffice.
struct World {
  World(const ReplicationConfig& c, ChoiceSequence& s, transport::SimRuntime& r,
        server::EmbeddedCluster& cl)
      : config(c),
        choices(s),
        sim(r),
        cluster(cl),
        ops(c.with_get ? 2 : 1),
        reorders_left(c.reorder_budget) {}

  const ReplicationConfig config;
  ChoiceSequence& choices;
  transport::SimRuntime& sim;
  server::EmbeddedCluster& cluster;
  const int ops;

  CollectionId collection;
  BucketId bucket;
  std::unique_ptr<client::Client> clients[2];
  bool ops_started = false;
  int ops_finished = 0;
  OpResult results[2];
  int op_turns[2] = {0, 0};
  std::map<std::string, Micros, std::less<>> last_turn;  // per explored op task
  uint64_t progress = 0;
  Micros op_instant = -1;        // of the latest operation turn that was not a poll
  int reorders_left;             // -1: no bound
  std::vector<NodeId> to_crash;  // in order
  std::vector<NodeId> crashed;
  std::optional<Observed> last_offer;   // at the latest crash point offered
  std::optional<Observed> last_choice;  // at the latest scheduling choice
  // Terms, epochs and positions only grow.
  Term coordinator_term{0};
  Observed last;
  std::array<storage::ReplicaPosition, 3> max_positions{};
  bool done = false;
  std::string failure;
  const bool trace = std::getenv("SHOAL_INTERLEAVE_TRACE") != nullptr;  // choices on stderr

  [[nodiscard]] bool Exploring() const { return ops_started && ops_finished < ops; }
  void Fail(std::string what) {
    if (failure.empty()) failure = std::move(what);
  }
};

bool IsOpTask(std::string_view task) { return task == kOpTasks[0] || task == kOpTasks[1]; }
bool IsExplored(std::string_view task) {
  return IsOpTask(task) || task.starts_with(kCallAsyncPrefix);
}

Observed Observe(World& world) {
  Observed out;
  if (auto coordinator = world.cluster.coordinator(); coordinator != nullptr) {
    if (auto map = coordinator->map(); map != nullptr) out.coordinator_epoch = map->epoch().value();
  }
  for (size_t i = 0; i < kNodes.size(); ++i) {
    auto node = world.cluster.node(kNodes[i]);
    if (node == nullptr) continue;
    out.node_epochs[i] = node->epoch().value();
    out.positions[i] = node->store()->GetReplicaState(world.bucket).position;
    out.alive[i] = world.sim.IsAlive(Address::Node(kNodes[i]));
  }
  out.ops_finished = world.ops_finished;
  out.progress = world.progress;
  return out;
}

// Terms and epochs only grow (R4), and so does each copy's position (no copy is rolled back in
// this harness: a divergent copy would be rebuilt, never rewound).
void CheckMonotonic(World& world, const Observed& now) {
  auto coordinator = world.cluster.coordinator();
  if (coordinator == nullptr || coordinator->map() == nullptr) return;
  const auto* bucket = coordinator->map()->Find(world.bucket);
  if (bucket == nullptr) return world.Fail("the bucket left the map");
  if (bucket->term < world.coordinator_term) {
    world.Fail(fmt::format("the bucket's term went back from {} to {}",
                           world.coordinator_term.value(), bucket->term.value()));
  }
  world.coordinator_term = bucket->term;
  if (now.coordinator_epoch < world.last.coordinator_epoch) {
    world.Fail(fmt::format("the coordinator's epoch went back from {} to {}",
                           world.last.coordinator_epoch, now.coordinator_epoch));
  }
  for (size_t i = 0; i < kNodes.size(); ++i) {
    if (now.node_epochs[i] < world.last.node_epochs[i]) {
      world.Fail(fmt::format("{}'s epoch went back from {} to {}", kNodes[i].DebugString(),
                             world.last.node_epochs[i], now.node_epochs[i]));
    }
  }
  world.last = now;
  for (size_t i = 0; i < kNodes.size(); ++i) {
    if (now.positions[i] < world.max_positions[i]) {
      world.Fail(fmt::format("{}'s copy went back from {} to {}", kNodes[i].DebugString(),
                             world.max_positions[i].DebugString(), now.positions[i].DebugString()));
    }
    world.max_positions[i] = std::max(world.max_positions[i], now.positions[i]);
  }
}

void Crash(World& world) {
  const NodeId victim = world.to_crash.front();
  world.to_crash.erase(world.to_crash.begin());
  world.sim.Stop(Address::Node(victim));
  world.crashed.push_back(victim);
}

bool Lists(World& world, NodeId node) {
  const auto* bucket = world.cluster.coordinator()->map()->Find(world.bucket);
  return bucket != nullptr && bucket->HasReplica(node);
}

// R2: an acknowledged write is on every replica of the configuration at its acknowledgement
// (the coordinator's, which no primary's is ahead of).
void CheckAcknowledgedWrite(World& world) {
  const auto map = world.cluster.coordinator()->map();
  const auto* bucket = map->Find(world.bucket);
  if (bucket == nullptr) return world.Fail("the bucket left the map");
  for (NodeId replica : bucket->replicas) {
    auto got = world.cluster.node(replica)->store()->Get(world.collection, kInterleaveKey,
                                                         {.include_tombstones = true});
    const bool deleted = !got.ok() || got->tombstone;
    const bool holds =
        world.config.write == OpType::kDelete ? deleted : (!deleted && got->body == kWrittenValue);
    if (!holds) {
      world.Fail(fmt::format(
          "the {} was acknowledged, but {} (a replica at epoch {}) holds {}",
          std::string(ToString(world.config.write)), replica.DebugString(), map->epoch().value(),
          got.ok() ? fmt::format("'{}'{}", got->body, got->tombstone ? " (tombstone)" : "")
                   : got.status().ToString()));
    }
  }
}

void RunOp(World& world, int which) {
  client::Client& client = *world.clients[which];
  const CollectionId c = world.collection;
  OpResult result;
  if (which == 1) {
    result = GetOne(client, c);
  } else {
    switch (world.config.write) {
      case OpType::kInsert:
        result = ResultOf(client.Insert(c, kInterleaveKey, kWrittenValue).status());
        break;
      case OpType::kUpdate:
        result = ResultOf(client.Update(c, kInterleaveKey, kWrittenValue).status());
        break;
      case OpType::kDelete:
        result = ResultOf(client.Delete(c, kInterleaveKey).status());
        break;
      case OpType::kGet:
      case OpType::kQuery:
        result = {.kind = OpResult::Kind::kNotApplied, .value = "", .detail = "not a write"};
        break;
    }
    if (result.kind == OpResult::Kind::kOk) CheckAcknowledgedWrite(world);
  }
  world.results[which] = std::move(result);
  ++world.ops_finished;
}

// True once the fault has run its course: the crashed backup left the bucket, the crashed
// primary was replaced.
bool Settled(World& world) {
  if (!world.to_crash.empty()) return false;
  const auto* bucket = world.cluster.coordinator()->map()->Find(world.bucket);
  if (bucket == nullptr || bucket->replicas.empty()) return false;
  for (NodeId crashed : world.crashed) {
    if (bucket->HasReplica(crashed)) return false;
  }
  return true;
}

// After everything settled: every replica of the bucket holds the same document (version,
// tombstone, body) and the same bucket digest (R11).
void CheckReplicasEqual(World& world) {
  const auto map = world.cluster.coordinator()->map();
  const auto* bucket = map->Find(world.bucket);
  if (bucket == nullptr) return world.Fail("the bucket left the map");
  std::string first_doc;
  std::optional<uint64_t> first_digest;
  for (NodeId replica : bucket->replicas) {
    storage::BucketStore* store = world.cluster.node(replica)->store();
    auto got = store->Get(world.collection, kInterleaveKey, {.include_tombstones = true});
    const std::string doc = got.ok() ? fmt::format("v{} {} '{}'", got->version,
                                                   got->tombstone ? "tombstone" : "live", got->body)
                                     : got.status().ToString();
    auto digest = store->DigestRange(transport::ToPointRange(bucket->range));
    if (!digest.ok()) return world.Fail(fmt::format("digest: {}", digest.status().ToString()));
    if (!first_digest.has_value()) {
      first_doc = doc;
      first_digest = *digest;
    } else if (doc != first_doc || *digest != *first_digest) {
      world.Fail(fmt::format("replicas differ: {} holds {}, {} holds {} (digests {} and {})",
                             bucket->replicas.front().DebugString(), first_doc,
                             replica.DebugString(), doc, *first_digest, *digest));
    }
  }
}

void Harness(World& world) {
  transport::SimRuntime& sim = world.sim;
  server::EmbeddedCluster& cluster = world.cluster;
  auto stop = [&] {
    if (Status s = cluster.StopAll(); !s.ok()) world.Fail(fmt::format("stop: {}", s.ToString()));
    world.done = true;
  };
  if (Status s = cluster.Start(); !s.ok()) {
    world.Fail(fmt::format("cluster start: {}", s.ToString()));
    world.done = true;
    return;
  }
  auto coordinator = cluster.coordinator();
  const client::ClientOptions client_options{.call_timeout = 10'000'000,
                                             .max_attempts = 60,
                                             .initial_backoff = 1000,
                                             .max_backoff = 100'000};
  client::Client admin(sim, client_options);
  auto collection = admin.OpenCollection(kCollection);
  if (!collection.ok()) {
    world.Fail(fmt::format("create collection: {}", collection.status().ToString()));
    return stop();
  }
  world.collection = *collection;
  const Point point = PointOf(world.collection, kInterleaveKey);
  const auto& bucket = coordinator->map()->Lookup(point);
  if (bucket.replicas != std::vector<NodeId>{kN1, kN2, kN3}) {
    world.Fail("the test key's bucket is not [n1, n2, n3]");
    return stop();
  }
  world.bucket = bucket.id;
  if (Status s = WriteInitialState(admin, world.collection, world.config.scenario); !s.ok()) {
    world.Fail(fmt::format("initial state: {}", s.ToString()));
    return stop();
  }
  for (auto& client : world.clients) {
    client = std::make_unique<client::Client>(sim, client_options);
    if (Status s = client->Refresh(); !s.ok()) {
      world.Fail(fmt::format("client refresh: {}", s.ToString()));
      return stop();
    }
  }
  // Keepalives give the primary its read lease; the operations then start at an instant no
  // periodic task shares.
  if (!sim.Sleep(600 * kMs + 137).ok()) return;
  switch (world.config.fault) {
    case ReplicaFault::kRemoveBackup:
      world.to_crash = {kN3};
      break;
    case ReplicaFault::kFailover:
      world.to_crash = {kN1};
      break;
    case ReplicaFault::kRemoveThenFailover:
      world.to_crash = {kN3, kN1};
      break;
  }
  world.ops_started = true;
  for (int which = 0; which < world.ops; ++which) {
    sim.Spawn(Address::Client(static_cast<uint32_t>(which + 1)), std::string(kOpTasks[which]),
              [&world, which] { RunOp(world, which); });
  }
  const Micros deadline = sim.Now() + 60 * kSecond;
  while (world.ops_finished < world.ops || !Settled(world)) {
    if (sim.Now() > deadline) {
      world.Fail(
          fmt::format("not settled within 60 s: {} of {} operations finished, {} crashes "
                      "to go, map {}",
                      world.ops_finished, world.ops, world.to_crash.size(),
                      coordinator->map()->Find(world.bucket)->DebugString()));
      return stop();
    }
    if (!sim.Sleep(kPoll).ok()) return;
  }

  client::Client reader(sim, client_options);
  const OpResult final_get = GetOne(reader, world.collection);
  const OpResult final_query = QueryAll(reader, world.collection);
  if (final_get.kind == OpResult::Kind::kNotApplied || final_get.kind == OpResult::Kind::kUnknown ||
      final_query.kind != OpResult::Kind::kOk) {
    world.Fail(fmt::format("final reads failed: get {}, query {}", final_get.DebugString(),
                           final_query.DebugString()));
    return stop();
  }
  std::vector<ObservedOp> ops{
      {.op = world.config.write, .value = kWrittenValue, .result = world.results[0]}};
  if (world.config.with_get) {
    ops.push_back({.op = OpType::kGet, .value = "", .result = world.results[1]});
  }
  const Register initial = InitialRegister(world.config.scenario);
  if (!MatchesSerialOrder(ops, initial, final_get, final_query)) {
    world.Fail(fmt::format(
        "no serial order explains: {} -> {}{}, final get {}, final query {}",
        std::string(ToString(world.config.write)), world.results[0].DebugString(),
        world.config.with_get ? fmt::format(", get -> {}", world.results[1].DebugString())
                              : std::string(),
        final_get.DebugString(), final_query.DebugString()));
  }
  CheckReplicasEqual(world);
  if (world.trace) {
    std::fprintf(stderr, "t=%lld settled: %s; write %s%s; final get %s\n",
                 static_cast<long long>(sim.Now()),
                 coordinator->map()->Find(world.bucket)->DebugString().c_str(),
                 world.results[0].DebugString().c_str(),
                 world.config.with_get ? (", get " + world.results[1].DebugString()).c_str() : "",
                 final_get.DebugString().c_str());
  }
  stop();
}

std::string RunOnce(const ReplicationConfig& config, ChoiceSequence& choices, bool* uncertain) {
  const std::string dir = config.dir + "/run";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::string failure;
  bool unsure = false;
  {
    transport::SimRuntime sim(transport::SimOptions{.seed = 1,
                                                    .min_delay = 0,
                                                    .max_delay = 0,
                                                    .loss = 0,
                                                    .yield_on_reply = config.yield_on_reply});
    server::EmbeddedClusterOptions options;
    options.data_dir = dir;
    options.initial_nodes = 3;
    options.buckets = 1;
    options.replication_factor = 3;
    options.sync = false;
    // No balancer: only the replica manager changes the bucket's configuration. Heartbeats,
    // failover_timeout, read_lease and replica_ack_timeout keep their defaults (1 s each).
    options.coordinator.auto_balance = false;
    options.coordinator.balance_interval = kNever;
    options.node.store.block_cache_bytes = 1u << 20;
    options.node.store.write_buffer_bytes = 1u << 20;
    options.node.store.background_jobs = 1;
    options.node.store.sync_interval = std::chrono::milliseconds(0);
    server::EmbeddedCluster cluster(sim, options);
    World world(config, choices, sim, cluster);

    // Named failpoints are not turns here: the crash points are the harness's own.
    sim.SetChaosHook([](const Address&, std::string_view) { return false; });
    sim.SetStepObserver([&world](std::string_view task) {
      if (world.done || !world.ops_started) return;
      const Observed now = Observe(world);
      CheckMonotonic(world, now);
      if (!world.to_crash.empty()) {
        if (world.ops_finished == world.ops) {
          // After every acknowledgement: at once, but the primary only once a crashed backup
          // left the bucket (a removal, then a failover).
          const bool backup_gone =
              std::find(world.crashed.begin(), world.crashed.end(), kN3) == world.crashed.end() ||
              !Lists(world, kN3);
          if (world.to_crash.front() != kN1 || backup_gone) Crash(world);
        } else {
          // After the first crash, the second victim's crash points are the turns that changed
          // the state, not every step of the write (remove-then-failover: n1 while the write
          // waits for n3's removal).
          Observed seen = now;
          if (!world.crashed.empty()) seen.progress = 0;
          if (world.last_offer != seen) {
            world.last_offer = seen;
            const uint32_t crash = world.choices.Choose(2);
            if (world.trace) {
              std::fprintf(stderr, "t=%lld crash point before %s: %u\n",
                           static_cast<long long>(world.sim.Now()), std::string(task).c_str(),
                           crash);
            }
            if (crash == 1) Crash(world);
          }
        }
      }
      // The turn about to run is progress if it is an operation's that does not resume from a
      // poll or a back-off (a Sleep of some time), or a stream message's at an instant an
      // operation acted at (the write's own messages; keepalives on their own clock change
      // nothing a crash point would see).
      if (IsExplored(task)) {
        const Micros at = world.sim.Now();
        bool progress = at == world.op_instant;
        if (IsOpTask(task)) {
          auto [it, first] = world.last_turn.try_emplace(std::string(task), at);
          // Its first turn only prepares its request from its client's own map.
          progress = !first && it->second == at;
          it->second = at;
          if (first || progress) world.op_instant = at;
          ++world.op_turns[task == kOpTasks[0] ? 0 : 1];
        }
        if (progress) ++world.progress;
      }
    });
    sim.SetScheduleChooser([&world](const std::vector<std::string_view>& candidates) -> size_t {
      if (!world.Exploring()) return 0;
      for (size_t i = 0; i < candidates.size(); ++i) {
        // Any other task first (heartbeats, keepers, the replica manager, the polling harness):
        // it runs at its own time, which the operations do not share by design.
        if (!IsExplored(candidates[i])) return i;
      }
      for (size_t i = 0; i < candidates.size(); ++i) {
        // An operation's first turn only prepares its request from its own client's map.
        if (IsOpTask(candidates[i]) && world.op_turns[candidates[i] == kOpTasks[0] ? 0 : 1] == 0) {
          return i;
        }
      }
      // Only at an instant an operation acts at: its turns and the messages it sends (the
      // scheduler has not advanced the clock yet, so Now() is the previous event's time).
      bool op_due = false;
      for (auto c : candidates) op_due = op_due || IsOpTask(c);
      if (!op_due && world.sim.Now() != world.op_instant) return 0;
      const Observed now = Observe(world);
      if (world.last_choice == now || world.reorders_left == 0) return 0;
      world.last_choice = now;
      if (world.reorders_left > 0) --world.reorders_left;
      const uint32_t pick = world.choices.Choose(static_cast<uint32_t>(candidates.size()));
      if (world.trace) {
        std::string names;
        for (auto c : candidates) names += std::string(c) + " ";
        std::fprintf(stderr, "t=%lld choice among %s: %u\n",
                     static_cast<long long>(world.sim.Now()), names.c_str(), pick);
      }
      return pick;
    });
    // One more crash point per answer of the next victim on the data path: it handled the
    // request (a backup applied the entries, the primary committed the write) and crashes
    // before its answer leaves, which is lost (the caller's call times out).
    sim.SetMessageHook([&world](const Address&, const Address& to,
                                const transport::Request& request,
                                transport::SimRuntime::MessageLeg leg) {
      transport::SimRuntime::MessageFate fate;
      if (leg != transport::SimRuntime::MessageLeg::kReply || !world.Exploring() ||
          world.to_crash.empty() || to != Address::Node(world.to_crash.front()) ||
          !(std::holds_alternative<transport::WriteRequest>(request) ||
            std::holds_alternative<transport::ReplicateRequest>(request))) {
        return fate;
      }
      const uint32_t crash = world.choices.Choose(2);
      if (world.trace) {
        std::fprintf(stderr, "t=%lld crash point before %s's answer to %s: %u\n",
                     static_cast<long long>(world.sim.Now()), to.DebugString().c_str(),
                     std::string(transport::RequestName(request)).c_str(), crash);
      }
      if (crash == 1) {
        Crash(world);
        fate.lose = true;
      }
      return fate;
    });
    sim.Spawn(Address::Client(100), kHarnessTask, [&world] { Harness(world); });
    sim.RunUntil(3600LL * kSecond);
    if (!world.done) world.Fail("the run did not finish within an hour of simulated time");
    world.done = true;
    sim.SetScheduleChooser({});
    sim.SetStepObserver({});
    sim.SetMessageHook({});
    sim.Shutdown();
    (void)cluster.StopAll();
    failure = world.failure;
    for (int i = 0; i < world.ops; ++i) {
      if (world.results[i].kind == OpResult::Kind::kNotApplied ||
          world.results[i].kind == OpResult::Kind::kUnknown) {
        unsure = true;
      }
    }
  }
  std::filesystem::remove_all(dir, ec);
  if (uncertain != nullptr) *uncertain = unsure;
  return failure;
}

}  // namespace

std::string RunReplicatedInterleaving(const ReplicationConfig& config, ChoiceSequence& choices,
                                      bool* uncertain) {
  return RunOnce(config, choices, uncertain);
}

ExploreStats ExploreReplicatedInterleavings(const ReplicationConfig& config, uint64_t max_runs) {
  return ExploreHarness(
      [&config](ChoiceSequence& choices, bool* uncertain) {
        return RunReplicatedInterleaving(config, choices, uncertain);
      },
      config.DebugString(), max_runs);
}

}  // namespace shoal::sim
