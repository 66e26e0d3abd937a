#include "src/coordinator/executable_step.h"

#include <algorithm>
#include <vector>

namespace shoal::coordinator {
namespace {

bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

std::optional<cluster::MoveIntent> ExecutableStep(const cluster::ShardMap& map,
                                                  const cluster::MoveIntent& planned,
                                                  const std::function<bool(NodeId)>& is_down) {
  if (map.replication_factor() <= 1 || planned.source.empty() || planned.destination.empty() ||
      planned.source.front() == planned.destination.front() ||
      Contains(planned.source, planned.destination.front())) {
    return planned;
  }
  // The step becomes a handoff rather than being skipped: skipped, it stalled the balancer for
  // good (the planner asked for it again every round, and with a balance move pending it plans
  // nothing else, not even the handoffs that even out primaries).
  for (size_t i = 1; i < planned.source.size(); ++i) {
    const NodeId heir = planned.source[i];
    if (!Contains(planned.destination, heir) || is_down(heir)) continue;
    cluster::MoveIntent handoff = planned;
    handoff.destination = {heir};
    for (NodeId node : planned.source) {
      if (node != heir) handoff.destination.push_back(node);
    }
    handoff.bytes = 0;
    return handoff;
  }
  return std::nullopt;
}

}  // namespace shoal::coordinator
