#include "tests/sim/interleaving_explorer.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "src/client/client.h"
#include "src/common/point.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/failpoints.h"
#include "src/transport/sim_runtime.h"
#include "tests/sim/interleaving_register.h"

namespace shoal::sim {

// --- the move harness ---

std::string_view ToString(Scenario scenario) {
  switch (scenario) {
    case Scenario::kAbsent:
      return "absent";
    case Scenario::kLive:
      return "live";
    case Scenario::kDeleted:
      return "deleted";
  }
  return "?";
}

std::string_view ToString(OpType op) {
  switch (op) {
    case OpType::kInsert:
      return "insert";
    case OpType::kUpdate:
      return "update";
    case OpType::kDelete:
      return "delete";
    case OpType::kGet:
      return "get";
    case OpType::kQuery:
      return "query";
  }
  return "?";
}

std::string InterleavingConfig::DebugString() const {
  return fmt::format(
      "{{scenario {}, ops {} {}, start step {}, move budget {}, reply yields {}, mode {}}}",
      std::string(ToString(scenario)), std::string(ToString(a)), std::string(ToString(b)),
      start_step == kAfterMoveDone ? std::string("after-done") : std::to_string(start_step),
      move_budget, yield_on_reply,
      mode == cluster::TransitionMode::kCopyThenSwitch ? "copy-then-switch" : "switch-then-copy");
}

namespace {

using transport::Address;
using transport::Micros;

constexpr char kCollection[] = "docs";
constexpr char kMoveTask[] = "move";
constexpr char kHarnessTask[] = "harness";
constexpr std::string_view kOpTasks[2] = {"op.a", "op.b"};
constexpr Micros kPoll = 1000;  // the harness polls at a later time than every due task
constexpr Micros kNever = Micros{1} << 50;

// Starts the move in `mode`.
Status StartMove(coordinator::Coordinator& coordinator, BucketId bucket, NodeId destination,
                 cluster::TransitionMode mode) {
  return coordinator.MoveBucket(bucket, destination, mode);
}

// State of one run. Only one simulated task (or the driving thread between events) runs at a
// time, so plain fields suffice.
struct World {
  World(const InterleavingConfig& c, ChoiceSequence& s, bool p)
      : config(c), choices(s), probe(p), move_budget_left(c.move_budget) {}

  const InterleavingConfig config;
  ChoiceSequence& choices;
  const bool probe;  // run the move alone and record its shape

  CollectionId collection;
  Point point;
  std::unique_ptr<client::Client> clients[2];
  std::shared_ptr<node::StorageNode> nodes[2];
  int move_turns = 0;
  int op_turns[2] = {0, 0};
  int move_budget_left;
  bool move_finished = false;
  Status move_status;
  bool ops_started = false;
  int ops_finished = 0;
  OpResult results[2];
  bool done = false;
  std::string failure;
  std::vector<std::pair<std::string, int>> failpoints;

  [[nodiscard]] bool Exploring() const { return ops_started && ops_finished < 2; }
  void Fail(std::string what) {
    if (failure.empty()) failure = std::move(what);
  }
};

std::string ValueOf(int which) { return which == 0 ? R"({"v":"a"})" : R"({"v":"b"})"; }

void RunOp(World& world, int which) {
  client::Client& client = *world.clients[which];
  const OpType op = which == 0 ? world.config.a : world.config.b;
  const std::string value = ValueOf(which);
  const CollectionId c = world.collection;
  OpResult result;
  switch (op) {
    case OpType::kInsert:
      result = ResultOf(client.Insert(c, kInterleaveKey, value).status());
      break;
    case OpType::kUpdate:
      result = ResultOf(client.Update(c, kInterleaveKey, value).status());
      break;
    case OpType::kDelete:
      result = ResultOf(client.Delete(c, kInterleaveKey).status());
      break;
    case OpType::kGet:
      result = GetOne(client, c);
      break;
    case OpType::kQuery:
      result = QueryAll(client, c);
      break;
  }
  world.results[which] = std::move(result);
  ++world.ops_finished;
}

void SpawnOps(transport::SimRuntime& sim, World& world) {
  if (world.ops_started || world.probe) return;
  world.ops_started = true;
  for (int which = 0; which < 2; ++which) {
    sim.Spawn(Address::Client(static_cast<uint32_t>(which + 1)), std::string(kOpTasks[which]),
              [&world, which] { RunOp(world, which); });
  }
}

// True iff some serial order of the operations explains their results and the final state
// (interleaving_register.h).
bool MatchesSerialOrder(const World& world, const OpResult& final_get,
                        const OpResult& final_query) {
  const ObservedOp ops[2] = {
      {.op = world.config.a, .value = ValueOf(0), .result = world.results[0]},
      {.op = world.config.b, .value = ValueOf(1), .result = world.results[1]}};
  const Register initial = InitialRegister(world.config.scenario);
  return sim::MatchesSerialOrder(ops, initial, final_get, final_query);
}

void Harness(transport::SimRuntime& sim, World& world, server::EmbeddedCluster& cluster) {
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
  world.nodes[0] = cluster.node(NodeId(1));
  world.nodes[1] = cluster.node(NodeId(2));
  const client::ClientOptions client_options{.call_timeout = 10'000'000,
                                             .max_attempts = 12,
                                             .initial_backoff = 1000,
                                             .max_backoff = 100'000};
  client::Client admin(sim, client_options);
  auto collection = admin.OpenCollection(kCollection);
  if (!collection.ok()) {
    world.Fail(fmt::format("create collection: {}", collection.status().ToString()));
    return stop();
  }
  world.collection = *collection;
  world.point = PointOf(world.collection, kInterleaveKey);
  if (Status s = WriteInitialState(admin, world.collection, world.config.scenario); !s.ok()) {
    world.Fail(fmt::format("initial state: {}", s.ToString()));
    return stop();
  }
  // The operations' clients know the map from before the move.
  for (auto& client : world.clients) {
    client = std::make_unique<client::Client>(sim, client_options);
    if (Status s = client->Refresh(); !s.ok()) {
      world.Fail(fmt::format("client refresh: {}", s.ToString()));
      return stop();
    }
  }
  const auto& bucket = coordinator->map()->Lookup(world.point);
  if (bucket.replicas.empty() || bucket.replicas.front() != NodeId(1)) {
    world.Fail("the test key's bucket is not on n1");
    return stop();
  }
  const BucketId bucket_id = bucket.id;
  const cluster::TransitionMode mode = world.config.mode;
  sim.Spawn(Address::Coordinator(), kMoveTask, [&world, coordinator, bucket_id, mode] {
    world.move_status = StartMove(*coordinator, bucket_id, NodeId(2), mode);
    world.move_finished = true;
  });
  if (world.config.start_step == 0) SpawnOps(sim, world);
  // Later start steps are spawned by the step observer; after the move, here.
  while (!world.probe && !world.ops_started) {
    if (world.move_finished) {
      SpawnOps(sim, world);
    } else if (!sim.Sleep(kPoll).ok()) {
      return;
    }
  }
  for (int i = 0;
       i < 100'000 && (world.ops_finished < (world.probe ? 0 : 2) || !world.move_finished); ++i) {
    if (!sim.Sleep(kPoll).ok()) return;
  }
  if (!world.move_finished || world.ops_finished < (world.probe ? 0 : 2)) {
    world.Fail("the move or the operations did not finish");
    return stop();
  }

  // The move finished or aborted cleanly, and exactly one node serves the key.
  auto map = coordinator->map();
  if (map->TransitionCount() != 0) world.Fail("a transition is left in the map");
  const NodeId owner = client::OwnerOf(map->Lookup(world.point));
  if (world.move_status.ok() != (owner == NodeId(2))) {
    world.Fail(fmt::format("move returned {} but {} owns the key", world.move_status.ToString(),
                           owner.DebugString()));
  }
  int serving = 0;
  for (const auto& node : world.nodes) {
    if (node->CanAcknowledgeWrite(world.point)) {
      ++serving;
      if (node->id() != owner) {
        world.Fail(fmt::format("{} serves the key, the map says {}", node->id().DebugString(),
                               owner.DebugString()));
      }
    }
  }
  if (serving != 1) world.Fail(fmt::format("{} nodes serve the key", serving));

  client::Client reader(sim, client_options);
  const OpResult final_get = GetOne(reader, world.collection);
  const OpResult final_query = QueryAll(reader, world.collection);
  if (!world.probe) {
    if (final_get.kind == OpResult::Kind::kNotApplied || final_query.kind != OpResult::Kind::kOk) {
      world.Fail(fmt::format("final reads failed: get {}, query {}", final_get.DebugString(),
                             final_query.DebugString()));
    } else if (!MatchesSerialOrder(world, final_get, final_query)) {
      world.Fail(fmt::format(
          "no serial order explains: {} -> {}, {} -> {}, final get {}, final "
          "query {}, move {}",
          std::string(ToString(world.config.a)), world.results[0].DebugString(),
          std::string(ToString(world.config.b)), world.results[1].DebugString(),
          final_get.DebugString(), final_query.DebugString(), world.move_status.ToString()));
    }
  }
  stop();
}

std::string RunOnce(const InterleavingConfig& config, ChoiceSequence& choices, bool probe,
                    MoveShape* shape, bool* uncertain) {
  const std::string dir = config.dir + "/run";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  World world(config, choices, probe);
  {
    transport::SimRuntime sim(transport::SimOptions{.seed = 1,
                                                    .min_delay = 0,
                                                    .max_delay = 0,
                                                    .loss = 0,
                                                    .yield_on_reply = config.yield_on_reply});
    server::EmbeddedClusterOptions options;
    options.data_dir = dir;
    options.initial_nodes = 2;
    options.buckets = 1;
    options.sync = false;
    // No balancer, no heartbeats and no liveness timeouts during a run: only the move and the
    // operations take turns.
    options.coordinator.auto_balance = false;
    options.coordinator.balance_interval = kNever;
    options.coordinator.node_timeout = kNever;
    options.node.heartbeat_interval = kNever;
    options.node.store.block_cache_bytes = 1u << 20;
    options.node.store.write_buffer_bytes = 1u << 20;
    options.node.store.background_jobs = 1;
    options.node.store.sync_interval = std::chrono::milliseconds(0);
    server::EmbeddedCluster cluster(sim, options);

    // Every named failpoint becomes a scheduling turn of the move: the move pauses there.
    sim.SetChaosHook([&world, &sim](const Address&, std::string_view name) {
      // Unscheduled points are not turns (failpoints.h): the counted interleavings leave them out.
      if (transport::IsUnscheduledFailpoint(name)) return false;
      if (!world.done) {
        world.failpoints.emplace_back(std::string(name), world.move_turns);
        (void)sim.Sleep(0);
      }
      return false;
    });
    sim.SetStepObserver([&world, &sim](std::string_view task) {
      if (world.done) return;
      for (int which = 0; which < 2; ++which) {
        if (task == kOpTasks[which]) ++world.op_turns[which];
      }
      if (task == kMoveTask) {
        ++world.move_turns;
        if (world.config.start_step > 0 && world.move_turns == world.config.start_step) {
          SpawnOps(sim, world);
        }
      }
      // At most one node may acknowledge a write to the key at any instant.
      if (world.nodes[0] != nullptr && world.nodes[1] != nullptr &&
          world.nodes[0]->CanAcknowledgeWrite(world.point) &&
          world.nodes[1]->CanAcknowledgeWrite(world.point)) {
        world.Fail(fmt::format("both nodes may acknowledge writes to the key (move turn {})",
                               world.move_turns));
      }
    });
    sim.SetScheduleChooser([&world](const std::vector<std::string_view>& candidates) -> size_t {
      if (!world.Exploring()) return 0;
      bool op_due = false;
      for (size_t i = 0; i < candidates.size(); ++i) {
        const auto& name = candidates[i];
        if (name == kOpTasks[0] || name == kOpTasks[1]) {
          // An operation's first turn only prepares its request (the client's map is its own):
          // it commutes with every other turn.
          if (world.op_turns[name == kOpTasks[0] ? 0 : 1] == 0) return i;
          op_due = true;
        } else if (name != kMoveTask) {
          return i;  // any other task (the polling harness) first: it changes nothing shared
        }
      }
      std::vector<size_t> allowed;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (candidates[i] != kMoveTask || world.move_budget_left > 0 || !op_due) {
          allowed.push_back(i);
        }
      }
      const size_t pick =
          allowed.size() == 1
              ? allowed[0]
              : allowed[world.choices.Choose(static_cast<uint32_t>(allowed.size()))];
      if (candidates[pick] == kMoveTask && op_due) --world.move_budget_left;
      return pick;
    });
    sim.Spawn(Address::Client(100), kHarnessTask, [&] { Harness(sim, world, cluster); });
    sim.RunUntil(3600LL * 1'000'000);
    if (!world.done) world.Fail("the run did not finish within an hour of simulated time");
    world.done = true;
    sim.SetScheduleChooser({});
    sim.SetStepObserver({});
    sim.Shutdown();
    (void)cluster.StopAll();
  }
  std::filesystem::remove_all(dir, ec);
  if (uncertain != nullptr) {
    *uncertain = false;
    for (const auto& result : world.results) {
      if (!probe &&
          (result.kind == OpResult::Kind::kNotApplied || result.kind == OpResult::Kind::kUnknown)) {
        *uncertain = true;
      }
    }
  }
  if (shape != nullptr) {
    shape->turns = world.move_turns;
    shape->failpoints = world.failpoints;
    shape->failure = world.failure;
  }
  return world.failure;
}

}  // namespace

MoveShape ProbeMove(const InterleavingConfig& config) {
  ChoiceSequence none;
  MoveShape shape;
  (void)RunOnce(config, none, /*probe=*/true, &shape, nullptr);
  return shape;
}

std::string RunInterleaving(const InterleavingConfig& config, ChoiceSequence& choices,
                            bool* uncertain) {
  return RunOnce(config, choices, /*probe=*/false, nullptr, uncertain);
}

ExploreStats ExploreInterleavings(const InterleavingConfig& config, uint64_t max_runs) {
  return ExploreHarness(
      [&config](ChoiceSequence& choices, bool* uncertain) {
        return RunInterleaving(config, choices, uncertain);
      },
      config.DebugString(), max_runs);
}

}  // namespace shoal::sim
