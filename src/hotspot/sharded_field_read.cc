// The read side of ShardedFields (sharded_field.h): latest and snapshot reads of a field, and
// the inspection of its layout. The write side (updates, cells, resizes, retirement) is in
// sharded_field.cc.

#include <fmt/format.h>

#include <utility>

#include "src/hotspot/sharded_field.h"
#include "src/hotspot/sharded_field_internal.h"

namespace shoal::hotspot {
namespace {

using internal::Exhausted;
using internal::Prefix;

// Bounds of the read loops (see sharded_field.cc for the write side's).
constexpr int kMaxReadAttempts = 16;
constexpr int kMaxSnapshotAttempts = 32;
constexpr uint32_t kQueryPage = 1000;

}  // namespace

StatusOr<std::vector<ShardedFields::CellRead>> ShardedFields::ReadCells(
    std::string_view pk, std::string_view field, const std::vector<std::string>& tokens) {
  std::vector<CellRead> out;
  for (const auto& token : tokens) {
    CellRead read{.token = token, .found = false, .state = {}, .version = 0};
    auto doc = client_.Get(cells_, CellKey(pk, field, token));
    if (doc.ok()) {
      SHOAL_ASSIGN_OR_RETURN(read.state, CellState::Decode(doc->body));
      read.found = true;
      read.version = doc->version;
    } else if (doc.status().code() != StatusCode::kNotFound) {
      return doc.status();
    }
    out.push_back(std::move(read));
  }
  return out;
}

StatusOr<std::vector<ShardedFields::CellRead>> ShardedFields::QueryDynamicCells(
    std::string_view pk, std::string_view field) {
  const std::string prefix = Prefix(pk, field);
  client::QueryOptions query{
      .collection = cells_,
      .filter = {.all_of = {storage::FieldPredicate{
                     .path = "owner", .op = storage::CompareOp::kEq, .value = OwnerOf(pk, field)}}},
      .limit = kQueryPage,
      .cursor = {}};
  std::vector<CellRead> out;
  do {
    SHOAL_ASSIGN_OR_RETURN(client::QueryPage page, client_.Query(query));
    for (auto& doc : page.documents) {
      if (!doc.primary_key.starts_with(prefix)) continue;
      SHOAL_ASSIGN_OR_RETURN(CellState state, CellState::Decode(doc.body));
      out.push_back(CellRead{.token = doc.primary_key.substr(prefix.size()),
                             .found = true,
                             .state = std::move(state),
                             .version = doc.version});
    }
    query.cursor = std::move(page.next_cursor);
  } while (!query.cursor.empty());
  return out;
}

StatusOr<Value> ShardedFields::Read(const FieldSpec& spec, std::string_view pk, ReadMode mode) {
  if (spec.fold == nullptr) {
    return InvalidArgumentError(fmt::format("field \"{}\" is not a sharded field", spec.field));
  }
  if (mode == ReadMode::kSnapshot) return ReadSnapshot(spec, pk);
  for (int attempt = 0; attempt < kMaxReadAttempts; ++attempt) {
    bool retry = false;
    SHOAL_ASSIGN_OR_RETURN(Value value, ReadOnce(spec, pk, &retry));
    if (!retry) return value;
  }
  return Exhausted("reading", pk);
}

StatusOr<Value> ShardedFields::ReadOnce(const FieldSpec& spec, std::string_view pk, bool* retry) {
  SHOAL_ASSIGN_OR_RETURN(auto first, LoadRoot(spec, pk));
  const FieldRoot& root1 = first.first;
  std::vector<CellRead> cells;
  bool settled = true;  // every cell live and unsealed: root1 alone is enough
  if (spec.kind == FieldKind::kDynamic) {
    SHOAL_ASSIGN_OR_RETURN(cells, QueryDynamicCells(pk, spec.field));
    settled = false;
  } else {
    std::vector<std::string> tokens;
    for (const auto& c : root1.cells()) tokens.push_back(c.token);
    SHOAL_ASSIGN_OR_RETURN(cells, ReadCells(pk, spec.field, tokens));
    for (const auto& c : cells) settled = settled && c.found && !c.state.sealed;
  }
  Value value = root1.base();
  const FieldRoot* root = &root1;
  FieldRoot root2;
  if (!settled) {
    // A sealed or vanished cell may have been absorbed since root1: the second root says
    // which cells its base holds (R2). R4 keeps the tokens we may have read unless the read
    // spans kPruneLag root writes.
    SHOAL_ASSIGN_OR_RETURN(auto second, LoadRoot(spec, pk));
    root2 = std::move(second.first);
    if (root2.seq() < root1.seq() || root2.seq() - root1.seq() >= kPruneLag) {
      // The root was reset or rewritten many times during the read: read again.
      *retry = true;
      return Value();
    }
    value = root2.base();
    root = &root2;
  }
  for (const auto& c : cells) {
    if (!c.found || root->IsAbsorbed(c.token)) continue;
    SHOAL_ASSIGN_OR_RETURN(value, spec.fold->Combine(value, c.state.value));
  }
  return value;
}

StatusOr<Value> ShardedFields::ReadSnapshot(const FieldSpec& spec, std::string_view pk) {
  // A double collect: two consecutive collections that see the same root version and the same
  // cell versions (every write changes a version) saw the same state at the instant between.
  struct Collect {
    FieldRoot root;
    uint64_t root_version = 0;
    std::vector<CellRead> cells;
  };
  auto collect = [&]() -> StatusOr<Collect> {
    Collect out;
    auto doc = client_.Get(cells_, RootKey(pk, spec.field));
    if (doc.ok()) {
      SHOAL_ASSIGN_OR_RETURN(out.root, FieldRoot::Decode(doc->body));
      out.root_version = doc->version;
    } else if (doc.status().code() == StatusCode::kNotFound) {
      out.root = FieldRoot::Empty(spec.neutral);
    } else {
      return doc.status();
    }
    if (spec.kind == FieldKind::kDynamic) {
      SHOAL_ASSIGN_OR_RETURN(out.cells, QueryDynamicCells(pk, spec.field));
    } else {
      std::vector<std::string> tokens;
      for (const auto& c : out.root.cells()) tokens.push_back(c.token);
      SHOAL_ASSIGN_OR_RETURN(out.cells, ReadCells(pk, spec.field, tokens));
    }
    return out;
  };
  auto same = [](const Collect& a, const Collect& b) {
    if (a.root_version != b.root_version || a.cells.size() != b.cells.size()) return false;
    for (size_t i = 0; i < a.cells.size(); ++i) {
      if (a.cells[i].token != b.cells[i].token || a.cells[i].found != b.cells[i].found ||
          a.cells[i].version != b.cells[i].version) {
        return false;
      }
    }
    return true;
  };
  SHOAL_ASSIGN_OR_RETURN(Collect previous, collect());
  for (int attempt = 0; attempt < kMaxSnapshotAttempts; ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(Collect next, collect());
    if (same(previous, next)) {
      Value value = next.root.base();
      for (const auto& c : next.cells) {
        if (!c.found || next.root.IsAbsorbed(c.token)) continue;
        SHOAL_ASSIGN_OR_RETURN(value, spec.fold->Combine(value, c.state.value));
      }
      return value;
    }
    previous = std::move(next);
  }
  return AbortedError(fmt::format(
      "no snapshot of {:?} field {} after {} tries: updates are too frequent; read with "
      "ReadMode::kLatest",
      pk, spec.field, kMaxSnapshotAttempts));
}

StatusOr<FieldLayout> ShardedFields::Describe(const FieldSpec& spec, std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
  const FieldRoot& root = loaded.first;
  FieldLayout layout;
  layout.root_seq = root.seq();
  std::vector<std::string> tokens;
  if (spec.kind == FieldKind::kDynamic) {
    SHOAL_ASSIGN_OR_RETURN(std::vector<CellRead> cells, QueryDynamicCells(pk, spec.field));
    for (const auto& c : cells) {
      if (!root.IsAbsorbed(c.token)) tokens.push_back(c.token);
    }
    layout.pending_cells = static_cast<uint32_t>(tokens.size());
  } else {
    tokens = root.ActiveTokens();
    layout.active_cells = static_cast<uint32_t>(tokens.size());
    layout.retiring_cells = static_cast<uint32_t>(root.RetiringTokens().size());
  }
  std::vector<std::string> keys;
  for (const auto& token : tokens) keys.push_back(CellKey(pk, spec.field, token));
  CountPlacement(client_, cells_, keys, layout);
  return layout;
}

StatusOr<uint32_t> ShardedFields::CellCount(const FieldSpec& spec, std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(Tokens active, ActiveCells(spec, pk, false));
  return static_cast<uint32_t>(active->size());
}

StatusOr<ShardedFields::UpdateCount> ShardedFields::CountUpdates(const FieldSpec& spec,
                                                                 std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
  UpdateCount out;
  out.tokens = loaded.first.ActiveTokens();
  SHOAL_ASSIGN_OR_RETURN(std::vector<CellRead> cells, ReadCells(pk, spec.field, out.tokens));
  for (const auto& c : cells) {
    if (c.found) out.updates += c.state.updates;
  }
  return out;
}

}  // namespace shoal::hotspot
