// The end-of-run checks of the sharded-field simulation (hotspot_sim.h): after the workload, every
// key's reads, root and cell documents must agree with what the updaters were acknowledged, and
// the hidden collection must hold no document that no field accounts for.

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/client/client.h"
#include "src/hotspot/cell_state.h"
#include "src/hotspot/field_root.h"
#include "tests/sim/hotspot_sim_world.h"

namespace shoal::sim::hotspot_internal {
namespace {

// Every document of the hidden collection, or the error of the query.
StatusOr<std::vector<storage::Document>> ScanCells(client::Client& client, CollectionId cells) {
  std::vector<storage::Document> documents;
  client::QueryOptions query{.collection = cells, .filter = {}, .limit = 50, .cursor = ""};
  for (int page = 0; page < 10000; ++page) {
    auto result = client.Query(query);
    if (!result.ok()) return result.status();
    for (auto& document : result->documents) documents.push_back(std::move(document));
    if (result->next_cursor.empty()) return documents;
    query.cursor = result->next_cursor;
  }
  return InternalError("the query of the hidden collection does not end");
}

// One key at the end of the run: the final value, the root and every cell document it owns.
// `documents` is the whole hidden collection; the documents this key accounts for are erased.
void CheckFinalKey(transport::SimRuntime& sim, World& world, ShardedFields& fields,
                   const std::string& key, std::map<std::string, storage::Document>& documents) {
  const KeyStats& stats = world.stats[key];
  const FieldSpec& spec = world.spec;
  // Compact until nothing is left to finish (a crashed resize, pending dynamic cells).
  bool converged = false;
  for (int round = 0; round < 10 && !converged; ++round) {
    if (Status s = Settled(sim, [&] { return fields.Compact(spec, key); }); !s.ok()) {
      world.Fail(fmt::format("final Compact of {}: {}", key, s.ToString()));
      return;
    }
    auto layout = Settled(sim, [&] { return fields.Describe(spec, key); });
    if (!layout.ok()) {
      world.Fail(fmt::format("final Describe of {}: {}", key, layout.status().ToString()));
      return;
    }
    converged = layout->retiring_cells == 0 && layout->pending_cells == 0;
  }
  if (!converged) world.Fail(fmt::format("Compact of {} does not converge", key));

  auto latest = Settled(sim, [&] { return fields.Read(spec, key, ReadMode::kLatest); });
  auto snapshot = Settled(sim, [&] { return fields.Read(spec, key, ReadMode::kSnapshot); });
  if (!latest.ok() || !snapshot.ok()) {
    world.Fail(fmt::format("final reads of {}: {} / {}", key, latest.status().ToString(),
                           snapshot.status().ToString()));
    return;
  }
  auto count = CountOf(*latest);
  if (!count.ok()) {
    world.Fail(fmt::format("final value of {}: {}", key, count.status().ToString()));
    return;
  }
  if (*latest != *snapshot) {
    world.Fail(fmt::format("quiet reads of {} disagree: latest {} snapshot {}", key, latest->dump(),
                           snapshot->dump()));
  }
  if (*count < stats.acked || *count > stats.acked + stats.unknown) {
    world.Fail(
        fmt::format("final value of {} is {}: acked {}, unknown {}, failed {} (lost or "
                    "double-counted updates)",
                    key, *count, stats.acked, stats.unknown, stats.failed));
  }

  // The stored root.
  const std::string root_key = hotspot::RootKey(key, kField);
  auto root_doc = documents.find(root_key);
  if (root_doc == documents.end()) {
    if (stats.acked > 0) world.Fail(fmt::format("no root for {}", key));
    return;
  }
  auto root = hotspot::FieldRoot::Decode(root_doc->second.body);
  documents.erase(root_doc);
  if (!root.ok()) {
    world.Fail(fmt::format("final root of {}: {}", key, root.status().ToString()));
    return;
  }
  if (Status s = root->CheckInvariants(); !s.ok()) {
    world.Fail(fmt::format("final root of {}: {}: {}", key, s.ToString(), root->Encode()));
  }
  if (!root->RetiringTokens().empty() || !root->UndeletedAbsorbed().empty()) {
    world.Fail(fmt::format(
        "after the final Compact the root of {} still has {} retiring and {} "
        "undeleted absorbed cells: {}",
        key, root->RetiringTokens().size(), root->UndeletedAbsorbed().size(), root->Encode()));
  }

  // The cells: what the root lists must exist (P1), active cells must be open (P2: sealed cells
  // would send updaters back forever), an absorbed cell recorded deleted must be gone (else a
  // prune would count it again), and the stored state must add up to the value read.
  auto total = hotspot::Value(root->base());
  auto add = [&](const hotspot::Value& v) {
    auto sum = spec.fold->Combine(total, v);
    if (!sum.ok()) {
      world.Fail(fmt::format("cell value {} of {} does not fold: {}", v.dump(), key,
                             sum.status().ToString()));
      return;
    }
    total = *sum;
  };
  std::set<std::string> accounted;
  for (const auto& cell : root->cells()) {
    const std::string cell_key = hotspot::CellKey(key, kField, cell.token);
    accounted.insert(cell_key);
    auto doc = documents.find(cell_key);
    if (doc == documents.end()) {
      world.Fail(fmt::format("cell {} listed by the root of {} does not exist", cell.token, key));
      continue;
    }
    auto state = hotspot::CellState::Decode(doc->second.body);
    documents.erase(doc);
    if (!state.ok()) {
      world.Fail(fmt::format("cell {} of {}: {}", cell.token, key, state.status().ToString()));
      continue;
    }
    if (cell.active && state->sealed) {
      world.Fail(fmt::format("active cell {} of {} is sealed", cell.token, key));
    }
    add(state->value);
  }
  for (const auto& absorbed : root->absorbed()) {
    auto doc = documents.find(hotspot::CellKey(key, kField, absorbed.token));
    if (doc == documents.end()) continue;
    if (absorbed.deleted_at.has_value()) {
      world.Fail(fmt::format("absorbed cell {} of {} was recorded deleted at seq {} but is stored",
                             absorbed.token, key, *absorbed.deleted_at));
    }
    documents.erase(doc);
  }
  // Dynamic cells are found by their owner; those not absorbed still count.
  const std::string owner = hotspot::OwnerOf(key, kField);
  const std::string cell_prefix = hotspot::CellKey(key, kField, "");
  for (auto it = documents.begin(); it != documents.end();) {
    if (!it->first.starts_with(cell_prefix)) {
      ++it;
      continue;
    }
    auto state = hotspot::CellState::Decode(it->second.body);
    const std::string token = it->first.substr(cell_prefix.size());
    if (!state.ok()) {
      world.Fail(fmt::format("cell {} of {}: {}", token, key, state.status().ToString()));
    } else if (world.kind == FieldKind::kDynamic && state->owner == owner) {
      add(state->value);
    } else if (state->value == spec.neutral && !state->sealed && state->updates == 0) {
      ++world.result.leaked_cells;  // created by a resize that never published it
    } else {
      world.Fail(
          fmt::format("orphan cell {} of {} holds {} (sealed {}, {} updates): neither "
                      "listed nor absorbed, so these updates are lost",
                      token, key, state->value.dump(), state->sealed, state->updates));
    }
    it = documents.erase(it);
  }
  if (total != *latest) {
    world.Fail(fmt::format("the stored state of {} folds to {} but Read returns {}", key,
                           total.dump(), latest->dump()));
  }
}

}  // namespace

void FinalChecks(transport::SimRuntime& sim, World& world) {
  client::Client client(sim, SimClientOptions());
  ShardedFields fields(client, world.cells, Seed(world, 99));
  // Compacting first, then scanning: the scan sees the state the final reads saw.
  for (const std::string& key : world.keys) {
    for (int round = 0; round < 10; ++round) {
      if (Settled(sim, [&] { return fields.Compact(world.spec, key); }).ok()) break;
    }
  }
  auto scanned = Settled(sim, [&] { return ScanCells(client, world.cells); });
  if (!scanned.ok()) {
    world.Fail(fmt::format("scan of the hidden collection: {}", scanned.status().ToString()));
    return;
  }
  std::map<std::string, storage::Document> documents;
  for (auto& document : *scanned) {
    if (!documents.emplace(document.primary_key, document).second) {
      world.Fail("the scan returned a cell document twice");
    }
  }
  for (const std::string& key : world.keys) CheckFinalKey(sim, world, fields, key, documents);
  for (const auto& [pk, document] : documents) {
    world.Fail(fmt::format("a document of the hidden collection belongs to no field: {}",
                           document.DebugString()));
  }
}

}  // namespace shoal::sim::hotspot_internal
