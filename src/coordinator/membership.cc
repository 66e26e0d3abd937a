#include "src/coordinator/membership.h"

#include <fmt/format.h>

#include <string>

#include "src/common/log.h"
#include "src/coordinator/coordinator_options.h"

namespace shoal::coordinator {

Membership::Membership(transport::Runtime& runtime, transport::Micros node_timeout,
                       transport::Micros call_timeout)
    : runtime_(runtime),
      node_timeout_(node_timeout),
      call_timeout_(call_timeout),
      started_(runtime.Now()) {}

bool Membership::RecordHeartbeat(NodeId node) {
  absl::MutexLock lock(&mu_);
  const bool was_down = IsDownLocked(node);
  last_heartbeat_[node] = runtime_.Now();
  return was_down;
}

Status Membership::AdmitStore(NodeId node, uint64_t store_id, uint64_t bound_store) {
  if (store_id == 0) return OkStatus();
  absl::MutexLock lock(&mu_);
  const transport::Micros now = runtime_.Now();
  uint64_t live = 0;
  transport::Micros silent = 0;
  if (auto it = stores_.find(node); it != stores_.end()) {
    if (now - it->second.at <= node_timeout_) {
      live = it->second.id;
      silent = now - it->second.at;
    }
  } else if (bound_store != 0 && now - started_ <= node_timeout_) {
    live = bound_store;  // not heard yet since the start: the map's store may be about to speak
    silent = now - started_;
  }
  if (live != 0 && live != store_id) {
    Status refused = FailedPreconditionError(fmt::format(
        "{} is live with another data directory (store {:#x}, heard {} ms ago), not store "
        "{:#x}: a second process runs with --id {}, or this one's data directory was replaced "
        "while the first still runs. Give each node its own --id and data directory; a node "
        "whose data directory was replaced is taken once the old process has been silent for "
        "{} ms",
        node.DebugString(), live, silent / 1000, store_id, node.value(), node_timeout_ / 1000));
    if (refused_.emplace(node, store_id).second) {
      log::Warning("node.duplicate", {{"node", node.value()},
                                      {"store", fmt::format("{:#x}", store_id)},
                                      {"error", refused.ToString()}});
    }
    return refused;
  }
  stores_[node] = HeardStore{.id = store_id, .at = now};
  return OkStatus();
}

bool Membership::IsDownLocked(NodeId node) const {
  auto it = last_heartbeat_.find(node);
  const transport::Micros seen = it == last_heartbeat_.end() ? started_ : it->second;
  return runtime_.Now() - seen > node_timeout_;
}

bool Membership::HeardFromLocked(NodeId node) const {
  auto it = last_heartbeat_.find(node);
  return it != last_heartbeat_.end() && runtime_.Now() - it->second <= node_timeout_;
}

transport::Micros Membership::SilentFor(NodeId node) const {
  absl::MutexLock lock(&mu_);
  auto it = last_heartbeat_.find(node);
  return runtime_.Now() - (it == last_heartbeat_.end() ? started_ : it->second);
}

bool Membership::IsDown(NodeId node) const {
  absl::MutexLock lock(&mu_);
  return IsDownLocked(node);
}

bool Membership::HeardFrom(NodeId node) const {
  absl::MutexLock lock(&mu_);
  return HeardFromLocked(node);
}

std::set<NodeId> Membership::DownNodes(const cluster::ShardMap& map) const {
  absl::MutexLock lock(&mu_);
  std::set<NodeId> down;
  for (const auto& node : map.nodes()) {
    if (IsDownLocked(node.id)) down.insert(node.id);
  }
  return down;
}

Status Membership::CheckIn(NodeId node, const transport::ClusterState& state,
                           transport::Micros grace) {
  // A node whose process is starting sends its first heartbeat (and with it its address) within
  // moments; wait up to `grace` for it, polling the heartbeat record.
  const transport::Micros give_up = runtime_.Now() + grace;
  while (!HeardFrom(node)) {
    if (runtime_.Now() >= give_up) {
      // No recent heartbeat: ask the node itself (it may have started a moment ago). It
      // answers with the map it now holds.
      auto answer = runtime_.Call(transport::Address::Node(node),
                                  transport::InstallMapRequest{.state = state}, call_timeout_);
      const Status status = answer.ok() ? answer->status : answer.status();
      if (status.code() == StatusCode::kCancelled) return status;
      if (!status.ok()) {
        return FailedPreconditionError(fmt::format(
            "{} has not checked in with the coordinator and does not answer ({}); start its "
            "process (shoal node --id {} --coordinator ...) before giving it buckets",
            node.DebugString(), status.ToString(), node.value()));
      }
      (void)RecordHeartbeat(node);
      return OkStatus();
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(kCheckInPoll));
  }
  return OkStatus();
}

void Membership::AddJoining(NodeId node) {
  absl::MutexLock lock(&mu_);
  joining_.insert(node);
}

bool Membership::TakeJoining(NodeId node) {
  absl::MutexLock lock(&mu_);
  return joining_.erase(node) != 0;
}

std::set<NodeId> Membership::Joining() const {
  absl::MutexLock lock(&mu_);
  return joining_;
}

}  // namespace shoal::coordinator
