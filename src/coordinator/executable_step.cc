#include "src/coordinator/executable_step.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

namespace shoal::coordinator {
namespace {

bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

// No copy that stays may take the primary (every backup leaves too, or the planner kept only
// leaving ones): the primary stays, and one backup that goes (one the target drops, else one on a
// leaving node) gives its place to the target's first incoming copy; a later step hands the
// primary to that copy once it is built. None when no backup goes.
std::optional<cluster::MoveIntent> ReplaceABackupFirst(const cluster::MoveIntent& planned,
                                                       const std::function<bool(NodeId)>& leaving) {
  const auto incoming = std::find_if(planned.destination.begin(), planned.destination.end(),
                                     [&](NodeId node) { return !Contains(planned.source, node); });
  if (incoming == planned.destination.end()) return std::nullopt;
  std::optional<size_t> goes;
  for (size_t i = 1; i < planned.source.size() && !goes.has_value(); ++i) {
    if (!Contains(planned.destination, planned.source[i])) goes = i;
  }
  for (size_t i = 1; i < planned.source.size() && !goes.has_value(); ++i) {
    if (leaving(planned.source[i])) goes = i;
  }
  if (!goes.has_value()) return std::nullopt;
  cluster::MoveIntent step = planned;
  step.destination = planned.source;
  step.destination[*goes] = *incoming;
  return step;
}

}  // namespace

LedPrimaries PrimariesLed(const cluster::ShardMap& map) {
  LedPrimaries led;
  for (const cluster::BucketPlacement& bucket : map.buckets()) {
    const std::vector<NodeId>& target = bucket.TargetReplicas();
    if (!target.empty()) ++led[target.front()];
  }
  return led;
}

void TakeStep(const cluster::MoveIntent& step, LedPrimaries* led) {
  if (step.source.empty() || step.destination.empty() ||
      step.source.front() == step.destination.front()) {
    return;
  }
  uint32_t& before = (*led)[step.source.front()];
  if (before > 0) --before;
  ++(*led)[step.destination.front()];
}

std::optional<cluster::MoveIntent> ExecutableStep(const cluster::ShardMap& map,
                                                  const cluster::MoveIntent& planned,
                                                  const std::function<bool(NodeId)>& is_down,
                                                  const LedPrimaries& led) {
  if (map.replication_factor() <= 1 || planned.source.empty() || planned.destination.empty() ||
      planned.source.front() == planned.destination.front() ||
      Contains(planned.source, planned.destination.front())) {
    return planned;
  }
  // The step becomes a handoff rather than being skipped: skipped, it stalled the balancer for
  // good (the planner asked for it again every round, and with a balance move pending it plans
  // nothing else, not even the handoffs that even out primaries).
  const auto leads = [&](NodeId node) {
    auto it = led.find(node);
    return it == led.end() ? 0u : it->second;
  };
  const auto leaving = [&](NodeId node) {
    const cluster::NodeInfo* info = map.FindNode(node);
    return info == nullptr || info->state != cluster::NodeState::kActive;
  };
  std::optional<NodeId> heir;
  for (size_t i = 1; i < planned.source.size(); ++i) {
    const NodeId backup = planned.source[i];
    if (!Contains(planned.destination, backup) || is_down(backup) || leaving(backup)) continue;
    if (!heir.has_value() || leads(backup) < leads(*heir)) heir = backup;
  }
  if (!heir.has_value()) return ReplaceABackupFirst(planned, leaving);
  cluster::MoveIntent handoff = planned;
  handoff.destination = {*heir};
  for (NodeId node : planned.source) {
    if (node != *heir) handoff.destination.push_back(node);
  }
  handoff.bytes = 0;
  return handoff;
}

}  // namespace shoal::coordinator
