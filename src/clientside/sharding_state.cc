#include "src/clientside/sharding_state.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <set>

namespace shoal::clientside {

namespace {

constexpr std::array<ClientState, 6> kAllStates = {
    ClientState::kNormal,       ClientState::kEnterRebalance, ClientState::kRebalancing,
    ClientState::kEnterCleanup, ClientState::kCleanup,        ClientState::kLeaveRebalance};

bool ParseUint(std::string_view text, uint64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string_view ClientStateName(ClientState state) {
  switch (state) {
    case ClientState::kNormal:
      return "normal";
    case ClientState::kEnterRebalance:
      return "enter_rebalance";
    case ClientState::kRebalancing:
      return "rebalancing";
    case ClientState::kEnterCleanup:
      return "enter_cleanup";
    case ClientState::kCleanup:
      return "cleanup";
    case ClientState::kLeaveRebalance:
      return "leave_rebalance";
  }
  return "?";
}

ClientAlgorithm AlgorithmFor(ClientState state) {
  switch (state) {
    case ClientState::kNormal:
      return ClientAlgorithm::kNaive;
    case ClientState::kRebalancing:
      return ClientAlgorithm::kConsistent;
    case ClientState::kEnterRebalance:
    case ClientState::kEnterCleanup:
    case ClientState::kCleanup:
    case ClientState::kLeaveRebalance:
      return ClientAlgorithm::kNone;
  }
  return ClientAlgorithm::kNone;
}

bool IsBarrier(ClientState state) {
  switch (state) {
    case ClientState::kEnterRebalance:
    case ClientState::kEnterCleanup:
    case ClientState::kLeaveRebalance:
      return true;
    case ClientState::kNormal:
    case ClientState::kRebalancing:
    case ClientState::kCleanup:
      return false;
  }
  return false;
}

StatusOr<ShardingState> ShardingState::Next() const {
  ShardingState next = *this;
  switch (state) {
    case ClientState::kNormal:
      return FailedPreconditionError("normal has no next state: begin a change");
    case ClientState::kEnterRebalance:
      next.state = ClientState::kRebalancing;
      break;
    case ClientState::kRebalancing:
      next.state = ClientState::kEnterCleanup;
      break;
    case ClientState::kEnterCleanup:
      next.state = ClientState::kCleanup;
      break;
    case ClientState::kCleanup:
      next.state = ClientState::kLeaveRebalance;
      break;
    case ClientState::kLeaveRebalance:
      next.state = ClientState::kNormal;
      next.old_shards = shards;
      break;
  }
  return next;
}

StatusOr<ShardingState> ShardingState::BeginChange(uint32_t new_shards) const {
  if (state != ClientState::kNormal) {
    return FailedPreconditionError(
        fmt::format("a change is already in progress ({})", ClientStateName(state)));
  }
  if (new_shards == 0) return InvalidArgumentError("a collection needs at least one shard");
  if (new_shards == shards) return InvalidArgumentError("the shard count does not change");
  return ShardingState{.state = ClientState::kEnterRebalance,
                       .version = MapVersion(version.value() + 1),
                       .old_shards = shards,
                       .shards = new_shards};
}

std::string ShardingState::Encode() const {
  return fmt::format("{} {} {} {}", ClientStateName(state), version.value(), old_shards, shards);
}

StatusOr<ShardingState> ShardingState::Decode(std::string_view text) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    size_t space = text.find(' ');
    parts.push_back(text.substr(0, space));
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
  auto bad = [] { return MakeStatus(StatusCode::kDataLoss, "sharding state does not decode"); };
  if (parts.size() != 4) return bad();
  ShardingState s;
  bool known = false;
  for (ClientState c : kAllStates) {
    if (ClientStateName(c) == parts[0]) {
      s.state = c;
      known = true;
    }
  }
  uint64_t version = 0, old_shards = 0, shards = 0;
  if (!known || !ParseUint(parts[1], &version) || !ParseUint(parts[2], &old_shards) ||
      !ParseUint(parts[3], &shards)) {
    return bad();
  }
  s.version = MapVersion(version);
  s.old_shards = static_cast<uint32_t>(old_shards);
  s.shards = static_cast<uint32_t>(shards);
  SHOAL_RETURN_IF_ERROR(s.CheckInvariants());
  return s;
}

Status ShardingState::CheckInvariants() const {
  if (version.value() == 0) return InternalError("map version 0");
  if (shards == 0 || old_shards == 0) return InternalError("a shard count is 0");
  if (state == ClientState::kNormal && old_shards != shards) {
    return InternalError(fmt::format("normal with old_shards {} != shards {}", old_shards, shards));
  }
  if (state != ClientState::kNormal && old_shards == shards) {
    return InternalError("a change in progress that changes nothing");
  }
  if (state != ClientState::kNormal && version.value() < 2) {
    return InternalError("a change in progress needs an old version");
  }
  return OkStatus();
}

std::string StateKeys::barrier(const ShardingState& s) const {
  return fmt::format("{}barrier/{}/{}/", root_, s.version.value(), ClientStateName(s.state));
}

Status InitShardingState(metadata::MetadataStore& store, std::string_view collection,
                         uint32_t shards) {
  const ShardingState initial{.state = ClientState::kNormal,
                              .version = MapVersion(1),
                              .old_shards = shards,
                              .shards = shards};
  SHOAL_RETURN_IF_ERROR(initial.CheckInvariants());
  auto put = store.Put(StateKeys(collection).state(), initial.Encode(), metadata::kMustNotExist);
  if (!put.ok() && put.status().code() != StatusCode::kFailedPrecondition) return put.status();
  return OkStatus();
}

StatusOr<VersionedState> ReadShardingState(metadata::MetadataStore& store, const StateKeys& keys) {
  SHOAL_ASSIGN_OR_RETURN(metadata::Versioned stored, store.Get(keys.state()));
  SHOAL_ASSIGN_OR_RETURN(ShardingState state, ShardingState::Decode(stored.value));
  return VersionedState{.state = state, .key_version = stored.version};
}

Status BeginShardCountChange(metadata::MetadataStore& store, std::string_view collection,
                             uint32_t new_shards) {
  const StateKeys keys(collection);
  SHOAL_ASSIGN_OR_RETURN(VersionedState current, ReadShardingState(store, keys));
  SHOAL_ASSIGN_OR_RETURN(ShardingState next, current.state.BeginChange(new_shards));
  return store.Put(keys.state(), next.Encode(), current.key_version).status();
}

Status CommitNext(metadata::MetadataStore& store, const StateKeys& keys,
                  const VersionedState& from) {
  SHOAL_ASSIGN_OR_RETURN(ShardingState next, from.state.Next());
  auto put = store.Put(keys.state(), next.Encode(), from.key_version);
  if (!put.ok() && put.status().code() == StatusCode::kFailedPrecondition) return OkStatus();
  return put.status();
}

StatusOr<bool> TryCompleteBarrier(metadata::MetadataStore& store, const StateKeys& keys) {
  SHOAL_ASSIGN_OR_RETURN(VersionedState current, ReadShardingState(store, keys));
  if (!IsBarrier(current.state.state)) return true;
  SHOAL_ASSIGN_OR_RETURN(auto members, store.List(keys.members()));
  const std::string joined_prefix = keys.barrier(current.state);
  SHOAL_ASSIGN_OR_RETURN(auto joined, store.List(joined_prefix));
  std::set<std::string> joined_names;
  for (const auto& [key, value] : joined) joined_names.insert(key.substr(joined_prefix.size()));
  for (const auto& [key, value] : members) {
    if (!joined_names.contains(key.substr(keys.members().size()))) return false;
  }
  // The last one in triggers the next state (§4).
  SHOAL_RETURN_IF_ERROR(CommitNext(store, keys, current));
  return true;
}

}  // namespace shoal::clientside
