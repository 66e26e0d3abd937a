#include "src/coordinator/membership.h"

#include <fmt/format.h>

#include <string>

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
