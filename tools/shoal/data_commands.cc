// `shoal put|get|delete|query|status --cluster shoal://HOST:PORT`: a cluster's data and state
// from the command line, JSON in and out.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "include/shoal/shoal.h"
#include "proto/shoal.pb.h"
#include "src/client/client.h"
#include "src/cluster/move_ends.h"
#include "src/net/grpc_runtime.h"
#include "src/net/uri.h"
#include "src/storage/errors.h"
#include "tools/shoal/net_commands.h"
#include "tools/shoal/status_held.h"
#include "tools/shoal/status_hot_keys.h"

namespace shoal::tools {
namespace {

struct DataFlags {
  std::string cluster{kDefaultCluster};
  std::string collection;
  std::string key;
  std::string json_body = "-";  // "-" = read stdin
  std::string mode = "upsert";
  std::vector<std::string> where;
  uint32_t limit = 0;  // query: stop after this many documents; 0 = all
  bool json = false;
  bool count_only = false;   // query: print how many match, not the documents
  bool any_replica = false;  // get: ReadMode::kAnyReplica
  ClientSecurityFlags security;
};

// A stored body as JSON (it was validated on the way in; fall back to a string just in case).
nlohmann::json BodyJson(const std::string& body) {
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? nlohmann::json(body) : parsed;
}

StatusOr<Collection> OpenCollection(const DataFlags& flags, std::unique_ptr<Database>* db) {
  SHOAL_ASSIGN_OR_RETURN(*db, Database::Connect(flags.cluster, ConnectOptionsOf(flags.security)));
  return (*db)->GetCollection(flags.collection);
}

// `text` without the blanks (spaces, tabs, line breaks) at either end.
std::string_view Blankless(std::string_view text) {
  constexpr std::string_view kBlanks = " \t\r\n";
  const auto first = text.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlanks) - first + 1);
}

int RunPut(const DataFlags& flags) {
  std::string body = flags.json_body;
  if (body == "-") {
    body.assign(std::istreambuf_iterator<char>(std::cin), {});
    // What surrounds the document (the newline of `echo`, of a file's last line) is not of it.
    body = std::string(Blankless(body));
  }
  std::unique_ptr<Database> db;
  auto collection = OpenCollection(flags, &db);
  if (!collection.ok()) return FailCommand(collection.status());
  StatusOr<uint64_t> version = flags.mode == "insert"   ? collection->Insert(flags.key, body)
                               : flags.mode == "update" ? collection->Update(flags.key, body)
                                                        : collection->Upsert(flags.key, body);
  if (!version.ok()) return FailCommand(version.status());
  if (flags.json) {
    std::printf("%s\n", nlohmann::json{{"key", flags.key}, {"version", *version}}.dump().c_str());
  } else {
    std::printf("version %llu\n", static_cast<unsigned long long>(*version));
  }
  return 0;
}

int RunGet(const DataFlags& flags) {
  std::unique_ptr<Database> db;
  auto collection = OpenCollection(flags, &db);
  if (!collection.ok()) return FailCommand(collection.status());
  auto doc = collection->Get(
      flags.key,
      ReadOptions{.mode = flags.any_replica ? ReadMode::kAnyReplica : ReadMode::kLatest});
  if (!doc.ok()) return FailCommand(doc.status());
  if (flags.json) {
    nlohmann::json out{
        {"key", doc->key}, {"version", doc->version}, {"document", BodyJson(doc->json)}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n", doc->json.c_str());
  }
  return 0;
}

int RunDelete(const DataFlags& flags) {
  std::unique_ptr<Database> db;
  auto collection = OpenCollection(flags, &db);
  if (!collection.ok()) return FailCommand(collection.status());
  auto version = collection->Delete(flags.key);
  if (!version.ok()) return FailCommand(version.status());
  if (flags.json) {
    std::printf("%s\n", nlohmann::json{{"key", flags.key}, {"version", *version}}.dump().c_str());
  } else {
    std::printf("deleted, version %llu\n", static_cast<unsigned long long>(*version));
  }
  return 0;
}

// "age>=30", "address.city == \"Paris\"": a path, an operator and a JSON literal; blanks
// around the operator are not part of the path or the literal. The operator is the first one in
// the text (the longest where two start at one place), so a literal may hold operators.
StatusOr<Condition> ParseCondition(const std::string& text) {
  static const std::pair<std::string_view, Op> kOps[] = {
      {">=", Op::kGe}, {"<=", Op::kLe}, {"!=", Op::kNe}, {"==", Op::kEq},
      {">", Op::kGt},  {"<", Op::kLt},  {"=", Op::kEq}};
  size_t at = std::string::npos;
  const std::pair<std::string_view, Op>* found = nullptr;
  for (const auto& entry : kOps) {  // two-character operators first: they win a tie
    const size_t where = text.find(entry.first);
    if (where < at) {
      at = where;
      found = &entry;
    }
  }
  if (found != nullptr) {
    const std::string_view path = Blankless(std::string_view(text).substr(0, at));
    const std::string_view value =
        Blankless(std::string_view(text).substr(at + found->first.size()));
    if (!path.empty() && !value.empty()) {
      // The value is checked here, so that the error names the condition as typed.
      const auto json = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
      if (json.is_discarded() || json.is_object() || json.is_array()) {
        const bool bare_word = std::isalpha(static_cast<unsigned char>(value.front())) != 0;
        return InvalidArgumentError(
            bare_word ? fmt::format("--where '{}': {} is not JSON; a string takes double quotes: "
                                    "--where '{}{}\"{}\"'",
                                    text, value, path, found->first, value)
                      : fmt::format("--where '{}': {} is not a JSON number, \"string\", true, "
                                    "false or null (OP is one of == != < <= > >=)",
                                    text, value));
      }
      return Condition{
          .path = std::string(path), .op = found->second, .json_value = std::string(value)};
    }
  }
  return InvalidArgumentError(
      fmt::format("expected PATH OP JSON (OP one of == != < <= > >=): {}", text));
}

int RunQuery(const DataFlags& flags) {
  QueryOptions query;
  // Documents per streamed message: the server's default limit, or fewer when fewer are wanted.
  query.limit = flags.limit == 0 ? net::kDefaultStreamDocuments
                                 : std::min<uint32_t>(flags.limit, net::kDefaultStreamDocuments);
  for (const auto& text : flags.where) {
    auto condition = ParseCondition(text);
    if (!condition.ok()) return FailCommand(condition.status());
    query.filter.push_back(std::move(*condition));
  }
  std::unique_ptr<Database> db;
  auto collection = OpenCollection(flags, &db);
  if (!collection.ok()) return FailCommand(collection.status());
  nlohmann::json documents = nlohmann::json::array();
  uint64_t count = 0;
  // Each line is printed as its document arrives; reaching --limit cancels the stream.
  const Status status = collection->QueryStream(query, [&](const Document& doc) -> Status {
    if (flags.count_only) {
      // Counted only.
    } else if (flags.json) {
      documents.push_back(
          {{"key", doc.key}, {"version", doc.version}, {"document", BodyJson(doc.json)}});
    } else {
      // One line per document: a body stored with line breaks (a pretty-printed file) is
      // printed compact; any other body as stored.
      const bool multiline = doc.json.find_first_of("\r\n") != std::string::npos;
      std::printf("%s\t%s\n", doc.key.c_str(),
                  multiline ? BodyJson(doc.json).dump().c_str() : doc.json.c_str());
      std::fflush(stdout);
    }
    if (++count == flags.limit) return CancelledError("--limit reached");
    return OkStatus();
  });
  if (!status.ok() && !(flags.limit != 0 && count == flags.limit)) return FailCommand(status);
  if (flags.count_only) {
    if (flags.json) {
      std::printf("%s\n", nlohmann::json{{"count", count}}.dump().c_str());
    } else {
      std::printf("%llu\n", static_cast<unsigned long long>(count));
    }
  } else if (flags.json) {
    std::printf(
        "%s\n",
        nlohmann::json{{"count", documents.size()}, {"documents", documents}}.dump().c_str());
  }
  return 0;
}

struct NodeStatus {
  std::string state;
  std::string address;
  bool reachable = false;
  uint64_t buckets = 0;  // the buckets it is the primary (owner) of
  uint64_t backups = 0;  // the buckets it holds a backup copy of (K > 1)
  uint64_t bytes = 0;
  uint64_t documents = 0;
  double reads_per_second = 0;   // decayed rate of the reads it served, every copy it serves
  double writes_per_second = 0;  // decayed rate of the client writes it served (as primary)
  std::optional<transport::DiskSpaceReport> disk;  // none: unreachable or not reported
};

// Of a replicated map's buckets: fewer than K copies; fewer than min_in_sync (no writes until a
// copy is rebuilt); and whose primary the status could not reach (unavailable until a failover).
struct ReplicationHealth {
  uint64_t under_replicated = 0;
  uint64_t below_min_in_sync = 0;
  uint64_t primary_unreachable = 0;
};

int RunStatus(const DataFlags& flags) {
  auto coordinator = net::CoordinatorsOf(flags.cluster);
  if (!coordinator.ok()) return FailCommand(coordinator.status());
  auto runtime = StartCommandRuntime(*coordinator, flags.security);
  if (!runtime.ok()) return FailCommand(runtime.status());
  constexpr transport::Micros kTimeout = 5'000'000;
  auto reply =
      (*runtime)->Call(transport::Address::Coordinator(), transport::GetMapRequest{}, kTimeout);
  if (!reply.ok()) return FailCommand(reply.status());
  auto state = transport::BodyAs<transport::GetMapResponse>(std::move(*reply));
  if (!state.ok()) return FailCommand(state.status());
  const cluster::ShardMapPtr map = state->state.map;
  if (map == nullptr) return FailCommand(UnavailableError("the coordinator has no map yet"));
  // Which coordinator leads (several may run under ZooKeeper); "?" if it did not say.
  std::string leader = "?";
  uint64_t leader_epoch = 0;
  uint64_t split_bytes = 0;
  uint64_t merge_bytes = 0;
  uint32_t pending_min_in_sync = 0;  // a floor waiting for copies (replicas --set)
  std::vector<HeldCopyRow> held;     // copies outside the replicas, as the coordinator knows them
  {
    wire::AdminRequest progress;
    progress.mutable_progress();
    if (auto answer = (*runtime)->Admin(progress, kTimeout); answer.ok()) {
      leader = answer->leader();
      leader_epoch = answer->leader_epoch();
      split_bytes = answer->split_bytes();
      merge_bytes = answer->merge_bytes();
      pending_min_in_sync = answer->pending_min_in_sync();
      held = HeldCopyRows(*answer);
    }
  }

  std::map<NodeId, NodeStatus> nodes;
  std::map<BucketId, NodeId> owner;
  std::map<CollectionId, std::string> collection_names;
  for (const auto& spec : state->state.collections) collection_names[spec.id] = spec.name;
  std::vector<HotKeyRow> hot_keys;
  for (const auto& node : map->nodes()) {
    nodes[node.id].state = node.state == cluster::NodeState::kActive ? "active" : "leaving";
  }
  // A move in flight, for the JSON answer and the text lines alike.
  struct MoveInFlight {
    uint32_t bucket;
    uint64_t move;
    cluster::MoveEnds ends;
    std::string stage;
    std::string mode;
  };
  std::vector<MoveInFlight> moves;
  for (const auto& bucket : map->buckets()) {
    const NodeId id = client::OwnerOf(bucket);
    owner[bucket.id] = id;
    ++nodes[id].buckets;
    for (size_t i = 1; i < bucket.replicas.size(); ++i) ++nodes[bucket.replicas[i]].backups;
    if (bucket.transition.has_value()) {
      const auto& t = *bucket.transition;
      // In the operator's words, as `shoal plan` (cluster::EndsOf).
      const cluster::MoveEnds ends = cluster::EndsOf(t.source, t.destination);
      moves.push_back(
          {.bucket = bucket.id.value(),
           .move = t.move.value(),
           .ends = ends,
           .stage = std::string(cluster::ToString(t.stage)),
           .mode = ends.handoff ? std::string("handoff") : std::string(cluster::ToString(t.mode))});
    }
  }
  for (auto& [id, node] : nodes) {
    auto load =
        (*runtime)->Call(transport::Address::Node(id), transport::BucketLoadRequest{}, kTimeout);
    if (!load.ok()) continue;
    auto body = transport::BodyAs<transport::BucketLoadResponse>(std::move(*load));
    if (!body.ok()) continue;
    node.reachable = true;
    // Only the buckets the node owns count: a move's source still holds its copy meanwhile.
    for (const auto& b : body->buckets) {
      node.reads_per_second += b.reads_per_second;
      node.writes_per_second += b.writes_per_second;
      if (auto it = owner.find(b.bucket); it != owner.end() && it->second == id) {
        node.bytes += b.bytes;
        node.documents += b.documents;
      }
    }
    node.disk = body->disk;
    for (auto& stat : body->hot_keys) {
      hot_keys.push_back(HotKeyRow{.node = id, .stat = std::move(stat)});
    }
  }
  KeepHottest(&hot_keys);
  const bool replicated = map->replication_factor() > 1;
  std::set<NodeId> unreachable;
  for (const auto& [id, node] : nodes) {
    if (!node.reachable) unreachable.insert(id);
  }
  const std::vector<DegradedBucket> degraded = DegradedBuckets(*map, unreachable, held);
  ReplicationHealth health;
  for (const DegradedBucket& bucket : degraded) {
    if (bucket.under_replicated) ++health.under_replicated;
    if (bucket.below_min_in_sync) ++health.below_min_in_sync;
    if (bucket.primary_unreachable) ++health.primary_unreachable;
  }
  const std::map<NodeId, uint64_t> held_per_node = HeldCopiesPerNode(held);
  const auto held_by = [&](NodeId id) -> uint64_t {
    auto it = held_per_node.find(id);
    return it == held_per_node.end() ? 0 : it->second;
  };
  double sum = 0, squares = 0;
  for (auto& [id, node] : nodes) {
    // An unreachable node's address was dropped by its failed call; the coordinator still has it.
    if (auto address = (*runtime)->Resolve(transport::Address::Node(id)); address.ok())
      node.address = *address;
    sum += static_cast<double>(node.bytes);
    squares += static_cast<double>(node.bytes) * static_cast<double>(node.bytes);
  }
  const double n = static_cast<double>(nodes.size());
  const double mean = n > 0 ? sum / n : 0;
  const double imbalance =
      mean > 0 ? std::sqrt(std::max(0.0, squares / n - mean * mean)) / mean : 0;

  if (flags.json) {
    nlohmann::json out_nodes = nlohmann::json::array();
    for (const auto& [id, node] : nodes) {
      out_nodes.push_back(
          {{"id", id.value()},
           {"state", node.state},
           {"address", node.address},
           {"reachable", node.reachable},
           {"buckets", node.buckets},
           {"backups", node.backups},
           {"held_copies", held_by(id)},
           {"bytes", node.bytes},
           {"documents", node.documents},
           {"reads_per_second", node.reads_per_second},
           {"writes_per_second", node.writes_per_second},
           {"free_disk_bytes", node.disk.has_value() ? nlohmann::json(node.disk->free_bytes)
                                                     : nlohmann::json(nullptr)},
           {"reserve_bytes", node.disk.has_value() ? nlohmann::json(node.disk->reserve_bytes)
                                                   : nlohmann::json(nullptr)}});
    }
    nlohmann::json moves_json = nlohmann::json::array();
    for (const MoveInFlight& m : moves) {
      moves_json.push_back({{"bucket", m.bucket},
                            {"move", m.move},
                            {"from", m.ends.from.value()},
                            {"to", m.ends.to.value()},
                            {"stage", m.stage},
                            {"mode", m.mode}});
    }
    nlohmann::json out{{"coordinator", *coordinator},
                       {"leader", leader},
                       {"leader_epoch", leader_epoch},
                       {"epoch", map->epoch().value()},
                       {"buckets", map->buckets().size()},
                       {"imbalance", imbalance},
                       {"split_bytes", split_bytes},
                       {"merge_bytes", merge_bytes},
                       {"replication_factor", map->replication_factor()},
                       {"min_in_sync", map->min_in_sync()},
                       {"pending_min_in_sync", pending_min_in_sync},
                       {"under_replicated_buckets", health.under_replicated},
                       {"below_min_in_sync_buckets", health.below_min_in_sync},
                       {"primary_unreachable_buckets", health.primary_unreachable},
                       {"degraded_buckets", DegradedBucketsJson(degraded)},
                       {"nodes", out_nodes},
                       {"moves_in_flight", moves_json},
                       {"hot_keys", HotKeysJson(hot_keys, collection_names)}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf(
        "coordinator %s  leader %s (leader epoch %llu)  epoch %llu  buckets %zu  imbalance %.3f\n",
        coordinator->c_str(), leader.c_str(), static_cast<unsigned long long>(leader_epoch),
        static_cast<unsigned long long>(map->epoch().value()), map->buckets().size(), imbalance);
    std::printf("thresholds: split above %llu bytes, merge below %llu bytes (0 = off)\n",
                static_cast<unsigned long long>(split_bytes),
                static_cast<unsigned long long>(merge_bytes));
    if (replicated) {
      const std::string pending = pending_min_in_sync == 0
                                      ? ""
                                      : fmt::format(" ({} once every bucket has {} copies)",
                                                    pending_min_in_sync, pending_min_in_sync);
      std::printf(
          "replication: K %u, min_in_sync %u%s; buckets with fewer than K copies %llu, below "
          "min_in_sync (no writes) %llu, primary unreachable %llu\n",
          map->replication_factor(), map->min_in_sync(), pending.c_str(),
          static_cast<unsigned long long>(health.under_replicated),
          static_cast<unsigned long long>(health.below_min_in_sync),
          static_cast<unsigned long long>(health.primary_unreachable));
    }
    // With K > 1 "buckets" counts the node's primaries, "backups" its other copies, and "held"
    // the copies it holds outside their buckets' replicas.
    std::printf("%-6s %-8s %-22s %-9s %8s%s %14s %12s %9s %9s %20s\n", "node", "state", "address",
                "reachable", "buckets", replicated ? "  backups     held" : "", "bytes",
                "documents", "reads/s", "writes/s", "free disk (reserve)");
    std::vector<NodeId> full;  // free disk at the reserve: refusing every write
    for (const auto& [id, node] : nodes) {
      const bool at_reserve =
          node.disk.has_value() && node.disk->free_bytes <= node.disk->reserve_bytes;
      if (at_reserve) full.push_back(id);
      const std::string disk =
          node.disk.has_value()
              ? fmt::format("{}{} MiB ({})", at_reserve ? "FULL " : "", node.disk->free_bytes >> 20,
                            node.disk->reserve_bytes >> 20)
              : std::string("?");
      const std::string backups =
          replicated ? fmt::format(" {:8} {:8}", node.backups, held_by(id)) : "";
      std::printf("%-6u %-8s %-22s %-9s %8llu%s %14llu %12llu %9.1f %9.1f %20s\n", id.value(),
                  node.state.c_str(), node.address.empty() ? "?" : node.address.c_str(),
                  node.reachable ? "yes" : "no", static_cast<unsigned long long>(node.buckets),
                  backups.c_str(), static_cast<unsigned long long>(node.bytes),
                  static_cast<unsigned long long>(node.documents), node.reads_per_second,
                  node.writes_per_second, disk.c_str());
    }
    for (NodeId id : full) {
      std::printf(
          "node %u: free disk at its reserve: it refuses writes (NO_SPACE) and new copies%s "
          "until space is freed under its data directory\n",
          id.value(), replicated ? ", and its primaries go to backups with room," : "");
    }
    if (!degraded.empty()) {
      std::printf(
          "buckets short of copies or unavailable, and the nodes holding a copy outside "
          "their replicas (a force-primary target):\n%s",
          FormatDegradedBuckets(degraded, map->replication_factor()).c_str());
    }
    std::printf("moves in flight: %zu\n", moves.size());
    for (const MoveInFlight& m : moves) {
      std::printf("  %s\n", MoveLine(m.bucket, m.ends,
                                     fmt::format("{}, stage {}, move {}", m.mode, m.stage, m.move))
                                .c_str());
    }
    std::fputs(HotKeysText(hot_keys, collection_names).c_str(), stdout);
  }
  return 0;
}

CLI::App* DataCommand(CLI::App& app, const std::string& name, const std::string& help,
                      const std::shared_ptr<DataFlags>& flags) {
  CLI::App* cmd = app.add_subcommand(name, help);
  AddClusterOption(cmd, &flags->cluster);
  cmd->add_flag("--json", flags->json, "Print one JSON object");
  AddClientSecurityOptions(cmd, &flags->security);
  return cmd;
}

}  // namespace

StatusOr<std::unique_ptr<net::GrpcRuntime>> StartCommandRuntime(
    const std::string& cluster, const ClientSecurityFlags& security) {
  SHOAL_ASSIGN_OR_RETURN(std::string coordinator, net::CoordinatorsOf(cluster));
  SHOAL_ASSIGN_OR_RETURN(net::TransportSecurity transport, ClientSecurity(security, coordinator));
  return net::GrpcRuntime::Start({.listen = {},
                                  .advertise = {},
                                  .coordinator = coordinator,
                                  .address_book_path = {},
                                  .max_message_bytes = net::kDefaultMaxMessageBytes,
                                  .server_mode = net::GrpcServerMode::kSync,
                                  .pipe = false,
                                  .security = std::move(transport)});
}

int FailCommand(const Status& status) {
  const std::string code(StatusCodeToString(status.code()));
  const auto reason = storage::ReasonOf(status);
  const std::string_view reason_name =
      reason.has_value() ? storage::ErrorReasonName(*reason) : std::string_view();
  const std::string shown =
      reason_name.empty() || reason_name == code ? code : fmt::format("{} ({})", code, reason_name);
  std::fprintf(stderr, "error: %s: %s\n", shown.c_str(), std::string(MessageOf(status)).c_str());
  return 1;
}

void AddDataCommands(CLI::App& app) {
  auto put = std::make_shared<DataFlags>();
  CLI::App* p = DataCommand(app, "put", "Write a JSON document (from the argument or stdin)", put);
  p->add_option("collection", put->collection,
                "Collection (created by an upsert or insert if missing)")
      ->required();
  p->add_option("key", put->key, "Primary key")->required();
  p->add_option("json", put->json_body, "JSON object; '-' or nothing reads stdin");
  p->add_option("--mode", put->mode,
                "upsert, insert (fails if present) or update (fails if absent)")
      ->check(CLI::IsMember({"upsert", "insert", "update"}))
      ->capture_default_str();
  p->callback([put] { std::exit(RunPut(*put)); });

  auto get = std::make_shared<DataFlags>();
  CLI::App* g =
      DataCommand(app, "get", "Read a document: its JSON (--json: key, version, document)", get);
  g->add_option("collection", get->collection, "Collection (must exist)")->required();
  g->add_option("key", get->key, "Primary key")->required();
  g->add_flag("--any-replica", get->any_replica,
              "Any copy may answer: possibly up to 1 s stale, never a write not yet on every "
              "copy");
  g->callback([get] { std::exit(RunGet(*get)); });

  auto del = std::make_shared<DataFlags>();
  CLI::App* d = DataCommand(app, "delete", "Delete a document", del);
  d->add_option("collection", del->collection, "Collection (must exist)")->required();
  d->add_option("key", del->key, "Primary key")->required();
  d->callback([del] { std::exit(RunDelete(*del)); });

  auto query = std::make_shared<DataFlags>();
  CLI::App* q = DataCommand(
      app, "query", "Every document matching all --where conditions, streamed: KEY<TAB>JSON lines",
      query);
  q->add_option("collection", query->collection, "Collection (must exist)")->required();
  q->add_option("--where", query->where, "PATH OP JSON, e.g. 'age>=30' (repeatable)");
  q->add_option("--limit", query->limit, "Stop after this many documents (0 = all)")
      ->check(CLI::Range(0u, std::numeric_limits<uint32_t>::max()))
      ->capture_default_str();
  q->add_flag("--count", query->count_only,
              "Print how many documents match (at most --limit), not the documents");
  q->callback([query] { std::exit(RunQuery(*query)); });

  auto status = std::make_shared<DataFlags>();
  CLI::App* s = DataCommand(
      app, "status", "Nodes, buckets and bytes per node, imbalance, moves in flight and hot keys",
      status);
  s->callback([status] { std::exit(RunStatus(*status)); });
}

}  // namespace shoal::tools
