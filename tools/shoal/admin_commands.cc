// `shoal add-node|remove-node|plan|rebalance|replicas|force-primary --cluster shoal://HOST:PORT`:
// cluster administration through the coordinator's Admin RPC, with a progress line until
// balanced. A request whose answer is lost (the coordinator died, or the leader changed) is
// repeated against the leader as net::RepeatOf allows, and the true outcome is reported
// (net/admin_client.h);
// `shoal thresholds [--split-bytes N] [--merge-bytes N]`: reads or sets the balancer's split and
// merge thresholds; and
// `shoal failpoint --target HOST:PORT SPEC`, answered by the process at that address itself.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "proto/shoal.pb.h"
#include "src/cluster/move_ends.h"
#include "src/cluster/shard_map.h"
#include "src/net/admin_client.h"
#include "src/net/grpc_runtime.h"
#include "src/net/uri.h"
#include "tools/shoal/net_commands.h"

namespace shoal::tools {
namespace {

constexpr transport::Micros kAdminTimeout = 10'000'000;
// A change whose moves neither start nor progress this long is explained once (WaitBalanced).
constexpr double kStallSeconds = 10;

struct AdminFlags {
  std::string cluster{kDefaultCluster};
  uint32_t node = 0;
  uint32_t bucket = 0;              // force-primary
  uint32_t replication_factor = 0;  // replicas --set
  uint32_t min_in_sync = 0;         // replicas --min-in-sync (0: a majority of K)
  bool accept_data_loss = false;    // force-primary
  uint32_t add = 0;
  uint32_t remove = 0;
  bool no_wait = false;
  int timeout_seconds = 600;
  bool json = false;
  ClientSecurityFlags security;
};

std::string Bytes(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:.1f} GiB", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:.1f} MiB", bytes / (1 << 20));
  if (bytes >= 1 << 10) return fmt::format("{:.1f} KiB", bytes / (1 << 10));
  return fmt::format("{:.0f} B", bytes);
}

}  // namespace

std::string MoveLine(uint32_t bucket, const cluster::MoveEnds& ends, std::string_view detail) {
  if (ends.handoff) {
    return fmt::format("bucket {}: primary node {} -> node {} (handoff, no data moves)", bucket,
                       ends.from.value(), ends.to.value());
  }
  if (ends.from.value() == 0) {
    return fmt::format("bucket {}: new copy on node {} ({})", bucket, ends.to.value(), detail);
  }
  if (ends.to.value() == 0) {
    return fmt::format("bucket {}: the copy on node {} leaves ({})", bucket, ends.from.value(),
                       detail);
  }
  return fmt::format("bucket {}: node {} -> node {} ({})", bucket, ends.from.value(),
                     ends.to.value(), detail);
}

namespace {

// What the change is expected to move, from a Plan asked for before it was requested; zero
// when the plan was not available (the progress line then shows the moves started so far).
struct ExpectedWork {
  uint64_t moves = 0;
  uint64_t bytes = 0;
};

// A progress counter since the command began. The counters are the answering coordinator's
// since it started: after a failover or a restart they start again from 0.
uint64_t Since(uint64_t now, uint64_t start) { return now >= start ? now - start : now; }

nlohmann::json ProgressJson(const wire::AdminResponse& now, const wire::AdminResponse& start,
                            double seconds) {
  return {{"balanced", now.balanced()},
          {"epoch", now.epoch()},
          {"moves_committed", Since(now.moves_committed(), start.moves_committed())},
          {"moves_aborted", Since(now.moves_aborted(), start.moves_aborted())},
          {"moves_in_flight", now.moves_in_flight()},
          {"bytes_moved", Since(now.bytes_moved(), start.bytes_moved())},
          {"bytes_planned", Since(now.bytes_planned(), start.bytes_planned())},
          {"bytes_copied", Since(now.bytes_copied(), start.bytes_copied())},
          {"seconds", seconds}};
}

// Every admin call of the CLI: repeated across a lost answer or a change of leader.
StatusOr<wire::AdminResponse> AdminCall(net::GrpcRuntime& runtime,
                                        const wire::AdminRequest& request) {
  SHOAL_ASSIGN_OR_RETURN(net::AdminOutcome outcome,
                         net::AdminWithRepeat(runtime, request, {.call_timeout = kAdminTimeout}));
  return std::move(outcome.response);
}

// Polls the coordinator until it reports balanced, drawing one progress line (buckets, bytes,
// rate, ETA) on stderr; returns the final progress as JSON. The bytes are those copied so far
// (they grow during a move), against the larger of the plan and the moves started; the rate is
// copied bytes per second since the request, and the ETA the rest at that rate.
StatusOr<nlohmann::json> WaitBalanced(net::GrpcRuntime& runtime, const wire::AdminResponse& start,
                                      const ExpectedWork& expected, const AdminFlags& flags) {
  const auto begin = std::chrono::steady_clock::now();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  wire::AdminRequest request;
  request.mutable_progress();
  int polls = 0;
  // When the counters last changed, and whether the stall was explained.
  std::tuple<uint64_t, uint64_t, uint64_t, uint64_t> last_counters{};
  double last_change = 0;
  bool stall_told = false;
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    SHOAL_ASSIGN_OR_RETURN(wire::AdminResponse now, AdminCall(runtime, request));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const std::tuple<uint64_t, uint64_t, uint64_t, uint64_t> counters{
        now.moves_started(), now.moves_committed(), now.moves_aborted(), now.bytes_copied()};
    if (counters != last_counters) {
      last_counters = counters;
      last_change = seconds;
    }
    const double copied = static_cast<double>(Since(now.bytes_copied(), start.bytes_copied()));
    const double total =
        std::max({static_cast<double>(expected.bytes),
                  static_cast<double>(Since(now.bytes_planned(), start.bytes_planned())), copied});
    const uint64_t committed = Since(now.moves_committed(), start.moves_committed());
    // A move begun before the command may commit during it: never fewer than committed.
    const uint64_t moves =
        std::max({expected.moves, Since(now.moves_started(), start.moves_started()), committed});
    const double rate = seconds > 0 ? copied / seconds : 0;
    const std::string eta =
        rate > 0 && total > copied ? fmt::format("{:.0f} s", (total - copied) / rate) : "-";
    const std::string line = fmt::format(
        "buckets moved {} of {} (in flight {}, aborted {}) | {} of {} | {}/s | ETA {} | {:.1f} s",
        committed, moves, now.moves_in_flight(), Since(now.moves_aborted(), start.moves_aborted()),
        Bytes(copied), Bytes(total), Bytes(rate), eta, seconds);
    if (!flags.json && (tty || ++polls % 4 == 0 || now.balanced())) {
      std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line.c_str());
    }
    if (now.balanced()) {
      if (!flags.json && tty) std::fprintf(stderr, "\n");
      return ProgressJson(now, start, seconds);
    }
    // Once, after a while without any move starting, ending or copying a byte: what usually
    // holds the change up.
    if (!flags.json && !stall_told && seconds - last_change >= kStallSeconds) {
      stall_told = true;
      std::fprintf(stderr,
                   "%sno move has started or progressed for %.0f s: a bucket whose every copy is "
                   "on a node that is down cannot move until one of them returns (`shoal status` "
                   "lists the buckets short of copies or unavailable); waiting\n",
                   tty ? "\n" : "", kStallSeconds);
    }
    if (seconds > flags.timeout_seconds) {
      if (!flags.json && tty) std::fprintf(stderr, "\n");
      return DeadlineExceededError(fmt::format(
          "not balanced after {} s (moves go on in the background)", flags.timeout_seconds));
    }
  }
}

// What `replicas` set; without the wait, also when the floor asked for applies.
std::string ReplicasOutcome(const AdminFlags& flags) {
  std::string done = fmt::format("K = {}", flags.replication_factor);
  if (flags.no_wait) {
    const uint32_t floor = flags.min_in_sync != 0
                               ? flags.min_in_sync
                               : cluster::ShardMap::DefaultMinInSync(flags.replication_factor);
    done += fmt::format(" (min_in_sync becomes {} once every bucket has that many copies)", floor);
  }
  return done;
}

// `shoal replicas` without --set: the setting in force, and the floor that waits for copies.
int ShowReplicas(net::GrpcRuntime& runtime, const AdminFlags& flags) {
  auto reply =
      runtime.Call(transport::Address::Coordinator(), transport::GetMapRequest{}, kAdminTimeout);
  if (!reply.ok()) return FailCommand(reply.status());
  auto state = transport::BodyAs<transport::GetMapResponse>(std::move(*reply));
  if (!state.ok()) return FailCommand(state.status());
  if (state->state.map == nullptr) {
    return FailCommand(UnavailableError("the coordinator has no map yet"));
  }
  wire::AdminRequest progress;
  progress.mutable_progress();
  auto answer = AdminCall(runtime, progress);
  if (!answer.ok()) return FailCommand(answer.status());
  const cluster::ShardMap& map = *state->state.map;
  if (flags.json) {
    std::printf("%s\n", nlohmann::json{{"replication_factor", map.replication_factor()},
                                       {"min_in_sync", map.min_in_sync()},
                                       {"pending_min_in_sync", answer->pending_min_in_sync()}}
                            .dump()
                            .c_str());
    return 0;
  }
  std::string floor = fmt::format("min_in_sync {}", map.min_in_sync());
  if (answer->pending_min_in_sync() != 0) {
    floor += fmt::format(" ({} once every bucket has {} copies)", answer->pending_min_in_sync(),
                         map.replication_factor());
  }
  std::printf(
      "replicas: K = %u, %s (`shoal status` shows the copies per node; `shoal replicas --set K` "
      "changes it)\n",
      map.replication_factor(), floor.c_str());
  return 0;
}

int RunAdmin(const AdminFlags& flags, const std::string& command) {
  auto runtime = StartCommandRuntime(flags.cluster, flags.security);
  if (!runtime.ok()) return FailCommand(runtime.status());
  if (command == "replicas" && flags.replication_factor == 0) return ShowReplicas(**runtime, flags);
  wire::AdminRequest progress;
  progress.mutable_progress();
  auto start = AdminCall(**runtime, progress);
  if (!start.ok()) return FailCommand(start.status());

  // The plan of the change, for the progress line's totals: asked for before the change, since
  // afterwards the moves it plans are under way. Best effort: without it the line shows the
  // moves started so far.
  ExpectedWork expected;
  if (command != "plan" && command != "replicas" && command != "force-primary" && !flags.no_wait) {
    wire::AdminRequest plan;
    plan.mutable_plan();
    if (command == "add-node") plan.mutable_plan()->set_add(flags.node);
    if (command == "remove-node") plan.mutable_plan()->set_remove(flags.node);
    auto planned = AdminCall(**runtime, plan);
    if (planned.ok())
      expected = {.moves = static_cast<uint64_t>(planned->moves().size()),
                  .bytes = planned->plan_bytes()};
  }

  wire::AdminRequest request;
  if (command == "add-node") request.mutable_add_node()->set_node(flags.node);
  if (command == "remove-node") request.mutable_remove_node()->set_node(flags.node);
  if (command == "rebalance") request.mutable_rebalance();
  if (command == "replicas") {
    // While copies are rebuilt a bucket has fewer than the new floor: the coordinator sets the
    // floor every bucket meets and raises it to the one asked for once the copies are there.
    request.mutable_set_replication()->set_replication_factor(flags.replication_factor);
    request.mutable_set_replication()->set_min_in_sync(flags.min_in_sync);
  }
  if (command == "force-primary") {
    if (!flags.accept_data_loss) {
      return FailCommand(InvalidArgumentError(
          "force-primary makes the node's copy the bucket's only one: acknowledged writes it "
          "lacks are lost; pass --accept-data-loss to go on"));
    }
    request.mutable_force_primary()->set_bucket(flags.bucket);
    request.mutable_force_primary()->set_node(flags.node);
  }
  if (command == "plan") {
    request.mutable_plan()->set_add(flags.add);
    request.mutable_plan()->set_remove(flags.remove);
  }
  auto outcome = net::AdminWithRepeat(**runtime, request, {.call_timeout = kAdminTimeout});
  if (!outcome.ok()) return FailCommand(outcome.status());
  const wire::AdminResponse* reply = &outcome->response;

  if (command == "plan") {
    nlohmann::json moves = nlohmann::json::array();
    for (const auto& m : reply->moves()) {
      moves.push_back({{"bucket", m.bucket()},
                       {"from", m.from()},
                       {"to", m.to()},
                       {"bytes", m.bytes()},
                       {"mode", m.mode()}});
    }
    if (flags.json) {
      nlohmann::json out{{"moves", moves},
                         {"splits", reply->splits()},
                         {"merges", reply->merges()},
                         {"bytes", reply->plan_bytes()},
                         {"estimated_seconds", reply->estimated_seconds()}};
      std::printf("%s\n", out.dump().c_str());
    } else {
      std::printf("%zu moves, %llu splits, %llu merges, %s, about %.1f s\n", moves.size(),
                  static_cast<unsigned long long>(reply->splits()),
                  static_cast<unsigned long long>(reply->merges()),
                  Bytes(static_cast<double>(reply->plan_bytes())).c_str(),
                  reply->estimated_seconds());
      for (const auto& m : reply->moves()) {
        const cluster::MoveEnds ends{
            .from = NodeId(m.from()), .to = NodeId(m.to()), .handoff = m.mode() == "handoff"};
        std::printf("  %s\n",
                    MoveLine(m.bucket(), ends,
                             fmt::format("{}, {}", Bytes(static_cast<double>(m.bytes())), m.mode()))
                        .c_str());
      }
    }
    return 0;
  }
  // What the coordinator did, with how it was learned when the first answer was lost.
  std::string done = command == "add-node"      ? fmt::format("node {} added", flags.node)
                     : command == "remove-node" ? fmt::format("node {} is leaving", flags.node)
                     : command == "replicas"    ? ReplicasOutcome(flags)
                     : command == "force-primary"
                         ? fmt::format(
                               "node {} is the only copy of bucket {} (writes "
                               "it lacked are lost)",
                               flags.node, flags.bucket)
                         : std::string("the balancer runs");
  if (!outcome->recovered.empty()) done += fmt::format(" ({})", outcome->recovered);
  nlohmann::json out{{"command", command}, {"epoch", reply->epoch()}, {"outcome", done}};
  if (flags.node != 0) out["node"] = flags.node;
  if (!outcome->recovered.empty()) out["recovered"] = outcome->recovered;
  if (!flags.json) std::printf("%s: %s\n", command.c_str(), done.c_str());
  if (!flags.no_wait && command != "force-primary") {
    auto balanced = WaitBalanced(**runtime, *start, expected, flags);
    if (!balanced.ok() && command == "replicas") {
      return FailCommand(Prefixed(
          balanced.status(),
          fmt::format("K = {} is set and its copies are still being built (the coordinator "
                      "raises min_in_sync to the floor asked for once they are; `shoal status` "
                      "shows the floor in force)",
                      flags.replication_factor)));
    }
    if (!balanced.ok()) return FailCommand(balanced.status());
    out["progress"] = *balanced;
    if (command == "replicas") {
      // Every bucket has its K copies: the floor asked for applies from now on (the
      // coordinator would raise it too, within a balancer round).
      wire::AdminRequest floor;
      floor.mutable_set_replication()->set_replication_factor(flags.replication_factor);
      floor.mutable_set_replication()->set_min_in_sync(flags.min_in_sync);
      auto set = net::AdminWithRepeat(**runtime, floor, {.call_timeout = kAdminTimeout});
      if (!set.ok()) return FailCommand(set.status());
    }
  }
  if (flags.json) {
    std::printf("%s\n", out.dump().c_str());
  } else if (command == "force-primary") {
    std::printf("%s: done\n", command.c_str());
  } else {
    std::printf("%s: done%s\n", command.c_str(),
                flags.no_wait ? " (moves go on in the background)" : ", the cluster is balanced");
  }
  return 0;
}

CLI::App* AdminCommand(CLI::App& app, const std::string& name, const std::string& help,
                       const std::shared_ptr<AdminFlags>& flags, bool waits) {
  CLI::App* cmd = app.add_subcommand(name, help);
  AddClusterOption(cmd, &flags->cluster);
  cmd->add_flag("--json", flags->json, "Print one JSON object");
  AddClientSecurityOptions(cmd, &flags->security);
  if (waits) {
    cmd->add_flag("--no-wait", flags->no_wait, "Return once the coordinator accepted the request");
    cmd->add_option("--timeout", flags->timeout_seconds, "Seconds to wait for balance")
        ->capture_default_str();
  }
  cmd->callback([flags, name] { std::exit(RunAdmin(*flags, name)); });
  return cmd;
}

struct ThresholdFlags {
  std::string cluster{kDefaultCluster};
  std::optional<uint64_t> split_bytes;
  std::optional<uint64_t> merge_bytes;
  bool json = false;
  ClientSecurityFlags security;
};

// Without a value: reads the thresholds (a progress request answers them too).
int RunThresholds(const ThresholdFlags& flags) {
  auto runtime = StartCommandRuntime(flags.cluster, flags.security);
  if (!runtime.ok()) return FailCommand(runtime.status());
  wire::AdminRequest request;
  if (flags.split_bytes.has_value() || flags.merge_bytes.has_value()) {
    auto* body = request.mutable_set_thresholds();
    if (flags.split_bytes.has_value()) body->set_split_bytes(*flags.split_bytes);
    if (flags.merge_bytes.has_value()) body->set_merge_bytes(*flags.merge_bytes);
  } else {
    request.mutable_progress();
  }
  auto reply = AdminCall(**runtime, request);
  if (!reply.ok()) return FailCommand(reply.status());
  if (flags.json) {
    std::printf("%s\n", nlohmann::json{{"split_bytes", reply->split_bytes()},
                                       {"merge_bytes", reply->merge_bytes()}}
                            .dump()
                            .c_str());
  } else {
    const auto show = [](uint64_t bytes) {
      return bytes == 0 ? std::string("off")
                        : fmt::format("{} bytes ({})", bytes, Bytes(static_cast<double>(bytes)));
    };
    std::printf("split above: %s\nmerge below: %s\n", show(reply->split_bytes()).c_str(),
                show(reply->merge_bytes()).c_str());
  }
  return 0;
}

struct FailpointFlags {
  std::string target;
  std::string spec;
  bool json = false;
  ClientSecurityFlags security;
};

// Replaces the failpoints of one running process (docs/design/network.md, "Failpoints").
int RunFailpoint(const FailpointFlags& flags) {
  auto runtime = StartCommandRuntime(flags.target, flags.security);
  if (!runtime.ok()) return FailCommand(runtime.status());
  wire::AdminRequest request;
  request.mutable_set_failpoints()->set_spec(flags.spec);
  auto reply = (*runtime)->AdminAt(flags.target, request, kAdminTimeout);
  if (!reply.ok()) return FailCommand(reply.status());
  if (flags.json) {
    std::printf("%s\n",
                nlohmann::json{{"target", flags.target}, {"failpoints", reply->failpoints()}}
                    .dump()
                    .c_str());
  } else {
    std::printf("%s: failpoints %s\n", flags.target.c_str(),
                reply->failpoints().empty() ? "off" : reply->failpoints().c_str());
  }
  return 0;
}

}  // namespace

void AddAdminCommands(CLI::App& app) {
  auto failpoint = std::make_shared<FailpointFlags>();
  CLI::App* f = app.add_subcommand(
      "failpoint",
      "Replace the failpoints of a running coordinator or node (SHOAL_FAILPOINTS syntax, e.g. "
      "'source.after_fence=pause:500,coordinator.after_commit=crash'; '' switches them off)");
  f->add_option("--target", failpoint->target, "HOST:PORT the process serves on")->required();
  f->add_option("spec", failpoint->spec, "NAME=crash[:N] or NAME=pause:MS, comma-separated")
      ->required();
  f->add_flag("--json", failpoint->json, "Print one JSON object");
  AddClientSecurityOptions(f, &failpoint->security);
  f->callback([failpoint] { std::exit(RunFailpoint(*failpoint)); });

  auto thresholds = std::make_shared<ThresholdFlags>();
  CLI::App* t = app.add_subcommand(
      "thresholds",
      "Show or set the balancer's split and merge thresholds (bytes per bucket; 0 = off; kept "
      "across restarts)");
  AddClusterOption(t, &thresholds->cluster);
  t->add_option("--split-bytes", thresholds->split_bytes,
                "Split buckets above this many bytes (65536 to 68719476736)");
  t->add_option("--merge-bytes", thresholds->merge_bytes,
                "Merge adjacent buckets below this many bytes (below half of split-bytes)");
  t->add_flag("--json", thresholds->json, "Print one JSON object");
  AddClientSecurityOptions(t, &thresholds->security);
  t->callback([thresholds] { std::exit(RunThresholds(*thresholds)); });

  auto add = std::make_shared<AdminFlags>();
  AdminCommand(app, "add-node",
               "Add a running node (start it first with `shoal node --id N`); buckets move to it",
               add, true)
      ->add_option("--id", add->node, "The node's id")
      ->required();
  auto remove = std::make_shared<AdminFlags>();
  AdminCommand(app, "remove-node", "Decommission a node: its buckets move away, then it leaves",
               remove, true)
      ->add_option("--id", remove->node, "The node's id")
      ->required();
  auto plan = std::make_shared<AdminFlags>();
  CLI::App* p = AdminCommand(app, "plan", "What the balancer would move now", plan, false);
  p->add_option("--add", plan->add, "... after adding this node id");
  p->add_option("--remove", plan->remove, "... after removing this node id");
  auto rebalance = std::make_shared<AdminFlags>();
  AdminCommand(app, "rebalance", "Run the balancer until the cluster is balanced", rebalance, true);
  auto replicas = std::make_shared<AdminFlags>();
  CLI::App* r = AdminCommand(
      app, "replicas",
      "Show or change the number of copies of every bucket (K) online; raising it rebuilds "
      "copies, with one copy enough for a write until they are all there",
      replicas, true);
  CLI::Option* set =
      r->add_option("--set", replicas->replication_factor,
                    "K, from 1 to the number of active nodes (without it: show K and min_in_sync)")
          ->check(CLI::Range(1u, std::numeric_limits<uint32_t>::max()));
  r->add_option("--min-in-sync", replicas->min_in_sync,
                "Copies a write needs (default: a majority of K)")
      ->needs(set);
  auto force = std::make_shared<AdminFlags>();
  CLI::App* fp = AdminCommand(app, "force-primary",
                              "Make one node's copy the only copy and primary of a bucket whose "
                              "in-sync copies are lost (acknowledged writes it lacks are lost)",
                              force, false);
  fp->add_option("--bucket", force->bucket, "The bucket's id")->required();
  fp->add_option("--node", force->node, "The node whose copy is kept")->required();
  fp->add_flag("--accept-data-loss", force->accept_data_loss, "Required: say you accept it");
}

}  // namespace shoal::tools
