#include "src/hotspot/sharded_field.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "src/common/point.h"
#include "src/hotspot/sharded_field_internal.h"

namespace shoal::hotspot {
namespace {

using internal::Exhausted;
using internal::JoinKey;
using internal::Prefix;

// Bounds of the protocol's retry loops: each iteration follows a concurrent change that is
// itself finite (a resize, a compaction), so hitting one means something is wrong. The read
// loops' bounds are in sharded_field_read.cc.
constexpr int kMaxRootAttempts = 64;
constexpr int kMaxRefreshes = 64;
constexpr int kPlacementTries = 24;
constexpr size_t kMaxCachedLayouts = 4096;

constexpr std::string_view kRootSuffix = "root";

[[nodiscard]] bool IsRace(const Status& status) {
  return status.code() == StatusCode::kFailedPrecondition ||
         status.code() == StatusCode::kAlreadyExists || status.code() == StatusCode::kUnknown;
}

}  // namespace

std::string RootKey(std::string_view pk, std::string_view field) {
  return JoinKey(pk, field, kRootSuffix);
}

std::string CellKey(std::string_view pk, std::string_view field, std::string_view token) {
  return JoinKey(pk, field, token);
}

std::string OwnerOf(std::string_view pk, std::string_view field) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : Prefix(pk, field)) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

void CountPlacement(client::Client& client, CollectionId collection,
                    const std::vector<std::string>& keys, FieldLayout& layout) {
  const cluster::ShardMapPtr map = client.map();
  if (map == nullptr) return;
  std::set<BucketId> buckets;
  std::set<NodeId> nodes;
  for (const auto& key : keys) {
    const auto& bucket = map->Lookup(PointOf(collection, key));
    buckets.insert(bucket.id);
    nodes.insert(client::OwnerOf(bucket));
  }
  layout.distinct_buckets = static_cast<uint32_t>(buckets.size());
  layout.distinct_nodes = static_cast<uint32_t>(nodes.size());
}

ShardedFields::ShardedFields(client::Client& client, CollectionId cells, uint64_t seed)
    : client_(client), cells_(cells), random_(seed) {}

std::string ShardedFields::NewToken() {
  std::lock_guard lock(mu_);
  return fmt::format("c{:016x}", random_.Next64());
}

void ShardedFields::Forget(std::string_view pk, std::string_view field) {
  std::lock_guard lock(mu_);
  if (auto it = layouts_.find(RootKey(pk, field)); it != layouts_.end()) layouts_.erase(it);
}

std::string ShardedFields::BeginUpdate(std::string_view pk, std::string_view field,
                                       const std::vector<std::string>& active) {
  std::lock_guard lock(mu_);
  // A random start spreads the updates of different processes; the least busy cell keeps this
  // process's concurrent updates off each other's cells (at most kMaxShards to look at).
  const size_t start = random_.Uniform(active.size());
  std::string key;
  uint32_t least = 0;
  for (size_t i = 0; i < active.size(); ++i) {
    std::string candidate = CellKey(pk, field, active[(start + i) % active.size()]);
    auto it = in_flight_.find(candidate);
    const uint32_t busy = it == in_flight_.end() ? 0u : it->second;
    if (i == 0 || busy < least) {
      key = std::move(candidate);
      least = busy;
      if (busy == 0) break;
    }
  }
  ++in_flight_[key];
  return key;
}

void ShardedFields::EndUpdate(const std::string& cell_key) {
  std::lock_guard lock(mu_);
  auto it = in_flight_.find(cell_key);
  if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
}

StatusOr<std::pair<FieldRoot, uint64_t>> ShardedFields::LoadRoot(const FieldSpec& spec,
                                                                 std::string_view pk) {
  auto doc = client_.Get(cells_, RootKey(pk, spec.field));
  if (doc.status().code() == StatusCode::kNotFound) {
    return std::make_pair(FieldRoot::Empty(spec.neutral), uint64_t{0});
  }
  if (!doc.ok()) return doc.status();
  SHOAL_ASSIGN_OR_RETURN(FieldRoot root, FieldRoot::Decode(doc->body));
  return std::make_pair(std::move(root), doc->version);
}

Status ShardedFields::StoreRoot(std::string_view pk, std::string_view field, const FieldRoot& root,
                                uint64_t expected) {
  const std::string key = RootKey(pk, field);
  if (expected == 0) return client_.Insert(cells_, key, root.Encode()).status();
  return client_.CompareAndSet(cells_, key, expected, root.Encode()).status();
}

StatusOr<std::vector<std::string>> ShardedFields::CreateCells(
    const FieldSpec& spec, std::string_view pk, const std::vector<std::string>& existing,
    uint32_t count) {
  // Placement (paper 003 §2.1: shards spread writes over nodes): each new cell goes to the
  // bucket, and preferably the node, that the field's cells use least, under the cached map.
  // A later move or split may co-locate cells again; that costs speed, not correctness.
  const cluster::ShardMapPtr map = client_.map();
  std::map<BucketId, int> bucket_use;
  std::map<NodeId, int> node_use;
  auto locate = [&](const std::string& token) -> std::pair<BucketId, NodeId> {
    if (map == nullptr) return {BucketId(), NodeId()};
    const auto& bucket = map->Lookup(PointOf(cells_, CellKey(pk, spec.field, token)));
    return {bucket.id, client::OwnerOf(bucket)};
  };
  for (const auto& token : existing) {
    auto [bucket, node] = locate(token);
    ++bucket_use[bucket];
    ++node_use[node];
  }
  std::vector<std::string> tokens;
  const std::string body =
      CellState{.value = spec.neutral, .sealed = false, .updates = 0, .owner = {}}.Encode();
  for (uint32_t i = 0; i < count; ++i) {
    std::string best;
    int best_score = 0;
    for (int t = 0; t < kPlacementTries; ++t) {
      std::string token = NewToken();
      auto [bucket, node] = locate(token);
      const int score = bucket_use[bucket] * 1000 + node_use[node];
      if (best.empty() || score < best_score) {
        best = std::move(token);
        best_score = score;
      }
      if (score == 0) break;
    }
    auto [bucket, node] = locate(best);
    ++bucket_use[bucket];
    ++node_use[node];
    // P1: the cell exists before any root lists it. A lost reply is retried: the token is
    // fresh, so kAlreadyExists can only be our own first attempt.
    Status inserted = client_.Insert(cells_, CellKey(pk, spec.field, best), body).status();
    if (inserted.code() == StatusCode::kUnknown) {
      inserted = client_.Insert(cells_, CellKey(pk, spec.field, best), body).status();
      if (inserted.code() == StatusCode::kAlreadyExists) inserted = OkStatus();
    }
    if (!inserted.ok()) {
      // Unpublished cells are never read; deleting them is tidiness, not correctness.
      (void)client_.Delete(cells_, CellKey(pk, spec.field, best));
      for (const auto& made : tokens) (void)client_.Delete(cells_, CellKey(pk, spec.field, made));
      return inserted;
    }
    tokens.push_back(std::move(best));
  }
  return tokens;
}

StatusOr<ShardedFields::Tokens> ShardedFields::ActiveCells(const FieldSpec& spec,
                                                           std::string_view pk, bool refresh) {
  const std::string root_key = RootKey(pk, spec.field);
  if (!refresh) {
    std::lock_guard lock(mu_);
    if (auto it = layouts_.find(root_key); it != layouts_.end()) return it->second;
  }
  for (int attempt = 0; attempt < kMaxRootAttempts; ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
    auto& [root, version] = loaded;
    std::vector<std::string> active = root.ActiveTokens();
    if (active.empty()) {
      // First use (or everything retired): create the cells, then publish them (P1).
      const uint32_t want = std::max<uint32_t>(
          1, spec.kind == FieldKind::kAuto ? spec.policy.min_shards : spec.shards);
      std::vector<std::string> existing;
      for (const auto& c : root.cells()) existing.push_back(c.token);
      SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> made, CreateCells(spec, pk, existing, want));
      SHOAL_RETURN_IF_ERROR(root.AddCells(made));
      Status stored = StoreRoot(pk, spec.field, root, version);
      if (!stored.ok()) {
        // Another writer published first (or the outcome is unknown): our cells are unused
        // unless the root now lists them.
        if (!IsRace(stored)) return stored;
        SHOAL_ASSIGN_OR_RETURN(auto now, LoadRoot(spec, pk));
        for (const auto& token : made) {
          if (!now.first.HasCell(token)) {
            (void)client_.Delete(cells_, CellKey(pk, spec.field, token));
          }
        }
        continue;
      }
      active = root.ActiveTokens();
    }
    std::lock_guard lock(mu_);
    if (layouts_.size() >= kMaxCachedLayouts) layouts_.clear();
    auto tokens = std::make_shared<const std::vector<std::string>>(std::move(active));
    layouts_[root_key] = tokens;
    return tokens;
  }
  return Exhausted("creating the first cells", pk);
}

StatusOr<ApplyOutcome> ShardedFields::Apply(const FieldSpec& spec, std::string_view pk,
                                            const Value& operand, const ApplyOptions& options) {
  if (spec.fold == nullptr) {
    return InvalidArgumentError(fmt::format("field \"{}\" is not a sharded field", spec.field));
  }
  SHOAL_ASSIGN_OR_RETURN(Value lifted, spec.fold->Lift(operand));
  switch (spec.kind) {
    case FieldKind::kDynamic:
      return ApplyDynamic(spec, pk, lifted);
    case FieldKind::kStatic:
    case FieldKind::kAuto:
      if (options.combine) return ApplyCombined(spec, pk, std::move(lifted), options);
      return ApplyInPlace(spec, pk, lifted, options, 1);
    case FieldKind::kEntityGroup:
      break;
  }
  return InvalidArgumentError(fmt::format("field \"{}\" is an entity group", spec.field));
}

StatusOr<ApplyOutcome> ShardedFields::ApplyDynamic(const FieldSpec& spec, std::string_view pk,
                                                   const Value& lifted) {
  // Paper 003 §2.2: every update is a new cell; inserts of distinct keys never conflict.
  const CellState cell{
      .value = lifted, .sealed = true, .updates = 1, .owner = OwnerOf(pk, spec.field)};
  SHOAL_RETURN_IF_ERROR(
      client_.Insert(cells_, CellKey(pk, spec.field, NewToken()), cell.Encode()).status());
  return ApplyOutcome{.conflicts = 0};
}

StatusOr<ApplyOutcome> ShardedFields::ApplyCombined(const FieldSpec& spec, std::string_view pk,
                                                    Value lifted, const ApplyOptions& options) {
  // As many writes at once as there are active cells, each on a cell of its own; the updates
  // beyond that fold into one waiting write (apply_combiner.h).
  SHOAL_ASSIGN_OR_RETURN(Tokens active, ActiveCells(spec, pk, /*refresh=*/false));
  const std::string lane = fmt::format("{}|{}|{}|{}", RootKey(pk, spec.field), spec.fold->name(),
                                       options.retry_on_conflict, options.max_attempts);
  const CombinedResult result = combiner_.Apply(
      lane, static_cast<uint32_t>(active->size()), std::move(lifted),
      [&](const Value& a, const Value& b) { return spec.fold->Combine(a, b); },
      [&](const Value& operand, uint32_t updates) -> StatusOr<CombinedWrite> {
        SHOAL_ASSIGN_OR_RETURN(ApplyOutcome written,
                               ApplyInPlace(spec, pk, operand, options, updates));
        return CombinedWrite{.conflicts = written.conflicts};
      });
  if (!result.write.ok()) return result.write.status();
  return ApplyOutcome{
      .conflicts = result.write->conflicts, .members = result.members, .queued = result.queued};
}

StatusOr<ApplyOutcome> ShardedFields::ApplyInPlace(const FieldSpec& spec, std::string_view pk,
                                                   const Value& lifted, const ApplyOptions& options,
                                                   uint32_t updates) {
  ApplyOutcome outcome;
  bool refresh = false;
  int refreshes = 0;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(Tokens cached, ActiveCells(spec, pk, refresh));
    const std::vector<std::string>& active = *cached;
    refresh = false;
    const std::string key = BeginUpdate(pk, spec.field, active);
    // Ends this attempt's claim on the cell on every path out of the iteration.
    struct Claim {
      ShardedFields* self;
      const std::string& key;
      ~Claim() { self->EndUpdate(key); }
    } claim{this, key};
    auto doc = client_.Get(cells_, key);
    StatusOr<CellState> cell = doc.ok() ? CellState::Decode(doc->body) : doc.status();
    if (!cell.ok() && cell.status().code() != StatusCode::kNotFound) return cell.status();
    if (!cell.ok() || cell->sealed) {
      // P3: a retired cell; the root has the current cells.
      if (++refreshes > kMaxRefreshes) return Exhausted("finding an active cell", pk);
      refresh = true;
      continue;
    }
    SHOAL_ASSIGN_OR_RETURN(Value next, spec.fold->Combine(cell->value, lifted));
    cell->value = std::move(next);
    cell->updates += updates;
    auto written = client_.CompareAndSet(cells_, key, doc->version, cell->Encode());
    if (written.ok()) return outcome;
    if (written.status().code() == StatusCode::kNotFound) {
      if (++refreshes > kMaxRefreshes) return Exhausted("finding an active cell", pk);
      refresh = true;
      continue;
    }
    if (written.status().code() != StatusCode::kFailedPrecondition) return written.status();
    ++outcome.conflicts;
    if (!options.retry_on_conflict) {
      return AbortedError(
          fmt::format("conflicting update of {:?} field {} (not retried)", pk, spec.field));
    }
    if (outcome.conflicts >= options.max_attempts) {
      return AbortedError(fmt::format("{} conflicting updates of {:?} field {}", outcome.conflicts,
                                      pk, spec.field));
    }
  }
}

StatusOr<std::optional<Value>> ShardedFields::Seal(std::string_view pk, std::string_view field,
                                                   std::string_view token) {
  const std::string key = CellKey(pk, field, token);
  for (int attempt = 0; attempt < kMaxRootAttempts; ++attempt) {
    auto doc = client_.Get(cells_, key);
    if (doc.status().code() == StatusCode::kNotFound) return std::optional<Value>();
    if (!doc.ok()) return doc.status();
    SHOAL_ASSIGN_OR_RETURN(CellState cell, CellState::Decode(doc->body));
    if (cell.sealed) return std::optional<Value>(cell.value);
    cell.sealed = true;
    Status sealed = client_.CompareAndSet(cells_, key, doc->version, cell.Encode()).status();
    if (sealed.ok()) return std::optional<Value>(cell.value);
    // A concurrent update or a lost reply: read again and see.
    if (!IsRace(sealed) && sealed.code() != StatusCode::kNotFound) return sealed;
  }
  return Exhausted("sealing a cell", pk);
}

Status ShardedFields::Retire(const FieldSpec& spec, std::string_view pk,
                             const std::vector<std::string>& tokens) {
  std::vector<std::string> to_delete;
  bool absorbed = false;
  for (int round = 0; !absorbed; ++round) {
    if (round == kMaxRootAttempts) return Exhausted("absorbing cells", pk);
    // The root's seq before the cells are read: if kPruneLag root writes happen before the
    // absorb, a cell read here may have been absorbed, deleted and pruned by another
    // compactor meanwhile (R4), and absorbing it again would count it twice; start over then.
    SHOAL_ASSIGN_OR_RETURN(auto before, LoadRoot(spec, pk));
    const uint64_t seq0 = before.first.seq();
    // P2: seal first, so the absorbed value is final.
    std::vector<SealedCell> sealed;
    for (const auto& token : tokens) {
      SHOAL_ASSIGN_OR_RETURN(std::optional<Value> value, Seal(pk, spec.field, token));
      // A missing cell was absorbed and deleted by another compactor (its value is in base),
      // or the root was reset: either way it must not be absorbed again.
      if (value.has_value()) sealed.push_back(SealedCell{.token = token, .value = *value});
    }
    for (int attempt = 0;; ++attempt) {
      if (attempt == kMaxRootAttempts) return Exhausted("absorbing cells", pk);
      SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
      auto& [root, version] = loaded;
      if (root.seq() < seq0 || root.seq() - seq0 >= kPruneLag) break;  // next round
      std::vector<SealedCell> fresh;
      for (const auto& cell : sealed) {
        // A static cell no longer listed was absorbed by someone else, or the root was reset.
        const bool listed = spec.kind == FieldKind::kDynamic || root.HasCell(cell.token);
        if (listed && !root.IsAbsorbed(cell.token)) fresh.push_back(cell);
      }
      if (!fresh.empty()) {
        SHOAL_RETURN_IF_ERROR(root.Absorb(*spec.fold, fresh));
        Status stored = StoreRoot(pk, spec.field, root, version);
        if (!stored.ok()) {
          if (IsRace(stored)) continue;
          return stored;
        }
      }
      to_delete = root.UndeletedAbsorbed();
      absorbed = true;
      break;
    }
  }
  if (to_delete.empty()) return OkStatus();
  std::vector<std::string> deleted;
  for (const auto& token : to_delete) {
    Status status = client_.Delete(cells_, CellKey(pk, spec.field, token)).status();
    if (status.ok() || status.code() == StatusCode::kNotFound) deleted.push_back(token);
  }
  for (int attempt = 0; attempt < kMaxRootAttempts; ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
    auto& [root, version] = loaded;
    if (version == 0) return OkStatus();  // reset meanwhile
    root.RecordDeleted(deleted);
    Status stored = StoreRoot(pk, spec.field, root, version);
    if (stored.ok()) return OkStatus();
    if (!IsRace(stored)) return stored;
  }
  return Exhausted("recording deleted cells", pk);
}

Status ShardedFields::Resize(const FieldSpec& spec, std::string_view pk, uint32_t cells) {
  if (spec.kind != FieldKind::kStatic && spec.kind != FieldKind::kAuto) {
    return InvalidArgumentError(
        fmt::format("field \"{}\" is {}: only static and auto fields have a shard count",
                    spec.field, ToString(spec.kind)));
  }
  if (cells < 1 || cells > kMaxShards) {
    return InvalidArgumentError(fmt::format("a field has 1 to {} shards", kMaxShards));
  }
  SHOAL_RETURN_IF_ERROR(ActiveCells(spec, pk, /*refresh=*/true).status());
  for (int attempt = 0;; ++attempt) {
    if (attempt == kMaxRootAttempts) return Exhausted("resizing", pk);
    SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
    auto& [root, version] = loaded;
    const std::vector<std::string> active = root.ActiveTokens();
    if (active.size() == cells) break;
    std::vector<std::string> made;
    if (active.size() < cells) {
      std::vector<std::string> existing;
      for (const auto& c : root.cells()) existing.push_back(c.token);
      SHOAL_ASSIGN_OR_RETURN(
          made, CreateCells(spec, pk, existing, cells - static_cast<uint32_t>(active.size())));
      SHOAL_RETURN_IF_ERROR(root.AddCells(made));
    } else {
      SHOAL_RETURN_IF_ERROR(
          root.Retire(std::vector<std::string>(active.begin() + cells, active.end())));
    }
    Status stored = StoreRoot(pk, spec.field, root, version);
    if (stored.ok()) break;
    if (!IsRace(stored)) return stored;
    SHOAL_ASSIGN_OR_RETURN(auto now, LoadRoot(spec, pk));
    for (const auto& token : made) {
      if (!now.first.HasCell(token)) (void)client_.Delete(cells_, CellKey(pk, spec.field, token));
    }
  }
  Forget(pk, spec.field);
  return Compact(spec, pk);
}

StatusOr<std::vector<std::string>> ShardedFields::DynamicTokens(std::string_view pk,
                                                                std::string_view field) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<CellRead> cells, QueryDynamicCells(pk, field));
  std::vector<std::string> tokens;
  for (const auto& c : cells) tokens.push_back(c.token);
  return tokens;
}

Status ShardedFields::Compact(const FieldSpec& spec, std::string_view pk) {
  if (spec.fold == nullptr) {
    return InvalidArgumentError(fmt::format("field \"{}\" is not a sharded field", spec.field));
  }
  std::vector<std::string> tokens;
  if (spec.kind == FieldKind::kDynamic) {
    SHOAL_ASSIGN_OR_RETURN(tokens, DynamicTokens(pk, spec.field));
  } else {
    SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
    tokens = loaded.first.RetiringTokens();
    if (tokens.empty() && loaded.first.UndeletedAbsorbed().empty()) return OkStatus();
  }
  return Retire(spec, pk, tokens);
}

Status ShardedFields::Reset(const FieldSpec& spec, std::string_view pk) {
  if (spec.fold == nullptr) return OkStatus();
  std::vector<std::string> tokens;
  if (spec.kind == FieldKind::kDynamic) {
    SHOAL_ASSIGN_OR_RETURN(tokens, DynamicTokens(pk, spec.field));
  } else {
    SHOAL_ASSIGN_OR_RETURN(auto loaded, LoadRoot(spec, pk));
    for (const auto& c : loaded.first.cells()) {
      tokens.push_back(c.token);
      // Sealed cells send stale updaters back to the (soon missing) root: nothing lands in a
      // cell that is about to be deleted.
      SHOAL_RETURN_IF_ERROR(Seal(pk, spec.field, c.token).status());
    }
    for (const auto& token : loaded.first.UndeletedAbsorbed()) tokens.push_back(token);
  }
  Status root_gone = client_.Delete(cells_, RootKey(pk, spec.field)).status();
  if (!root_gone.ok() && root_gone.code() != StatusCode::kNotFound) return root_gone;
  for (const auto& token : tokens) {
    Status gone = client_.Delete(cells_, CellKey(pk, spec.field, token)).status();
    if (!gone.ok() && gone.code() != StatusCode::kNotFound) return gone;
  }
  Forget(pk, spec.field);
  return OkStatus();
}

}  // namespace shoal::hotspot
