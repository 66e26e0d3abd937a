#include "src/coordinator/flap_damper.h"

#include <fmt/format.h>

#include <algorithm>

namespace shoal::coordinator {
namespace {

bool DampedBy(const std::vector<transport::Micros>& removals, transport::Micros latest,
              transport::Micros now) {
  if (now - latest >= FlapDamper::kStableFor) return false;
  const auto in_window = std::count_if(removals.begin(), removals.end(), [&](transport::Micros t) {
    return latest - t < FlapDamper::kDampWindow;
  });
  return in_window >= FlapDamper::kDampAfterRemovals;
}

}  // namespace

void FlapDamper::NoteCopies(NodeId node, size_t copies) {
  absl::MutexLock lock(&mu_);
  History& h = nodes_[node];
  // The first count is where the node starts, not a gain.
  if (h.sampled && copies > h.copies) h.gained = true;
  h.sampled = true;
  h.copies = copies;
}

bool FlapDamper::NoteRemoval(NodeId node, transport::Micros now) {
  absl::MutexLock lock(&mu_);
  History& h = nodes_[node];
  const bool was_damped = h.removed && DampedBy(h.removals, h.latest, now);
  if (!h.removed || h.gained) {
    h.removals.push_back(now);
    h.gained = false;
  }
  h.latest = h.removed ? std::max(h.latest, now) : now;
  h.removed = true;
  std::erase_if(h.removals, [&](transport::Micros t) { return h.latest - t >= kDampWindow; });
  return !was_damped && DampedBy(h.removals, h.latest, now);
}

std::vector<NodeId> FlapDamper::Damped(transport::Micros now) const {
  absl::MutexLock lock(&mu_);
  std::vector<NodeId> out;
  for (const auto& [node, h] : nodes_) {
    if (h.removed && DampedBy(h.removals, h.latest, now)) out.push_back(node);
  }
  return out;
}

Status FlapDamper::CheckInvariants() const {
  absl::MutexLock lock(&mu_);
  for (const auto& [node, h] : nodes_) {
    if (!h.removed && !h.removals.empty()) {
      return InternalError(
          fmt::format("flap damper: n{} counts removals none noted", node.value()));
    }
    for (size_t i = 0; i < h.removals.size(); ++i) {
      if ((i > 0 && h.removals[i] < h.removals[i - 1]) || h.removals[i] > h.latest ||
          h.latest - h.removals[i] >= kDampWindow) {
        return InternalError(fmt::format("flap damper: n{}'s removal {} is out of order or window",
                                         node.value(), h.removals[i]));
      }
    }
  }
  return OkStatus();
}

}  // namespace shoal::coordinator
