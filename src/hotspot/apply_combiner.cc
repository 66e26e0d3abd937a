#include "src/hotspot/apply_combiner.h"

#include <algorithm>
#include <utility>

namespace shoal::hotspot {

CombinedResult ApplyCombiner::Apply(const std::string& lane, uint32_t width, Value operand,
                                    const Merge& merge, const Write& write) {
  width = std::max<uint32_t>(width, 1);
  std::unique_lock lock(mu_);
  Lane& state = lanes_[lane];
  if (state.running < width) {
    // A free slot: write at once, alone (no added latency while the lane is not contended).
    ++state.running;
    ++counters_.writes;
    lock.unlock();
    CombinedResult result{.write = write(operand, 1)};
    lock.lock();
    EndWrite(lane);
    return result;
  }
  if (state.open != nullptr) {
    std::shared_ptr<Group> group = state.open;
    StatusOr<Value> merged = merge(group->operand, operand);
    if (merged.ok()) {
      group->operand = *std::move(merged);
      ++group->members;
      ++counters_.combined;
      group->cv.wait(lock, [&] { return group->done; });
      return CombinedResult{.write = group->result, .members = group->members, .queued = true};
    }
    // This operand does not fold with the group's (a type the fold refuses): the write of its
    // own reports the error, and the group's members are not failed for it.
    ++counters_.unmergeable;
    ++counters_.writes;
    lock.unlock();
    return CombinedResult{.write = write(operand, 1), .queued = true};
  }
  // Open a group and wait for a running write to hand over its slot.
  auto group = std::make_shared<Group>(std::move(operand));
  state.open = group;
  ++counters_.combined;
  group->cv.wait(lock, [&] { return group->may_run; });
  // EndWrite closed the group: nobody joins it any more, so its operand is final.
  ++counters_.writes;
  const uint32_t members = group->members;
  lock.unlock();
  StatusOr<CombinedWrite> written = write(group->operand, members);
  lock.lock();
  group->result = written;
  group->done = true;
  group->cv.notify_all();
  EndWrite(lane);
  return CombinedResult{.write = std::move(written), .members = members, .queued = true};
}

void ApplyCombiner::EndWrite(const std::string& lane) {
  auto it = lanes_.find(lane);
  if (it == lanes_.end()) return;  // cannot happen: a running write keeps its lane
  Lane& state = it->second;
  if (state.open != nullptr) {
    // The open group takes this write's slot: `running` stays the same.
    state.open->may_run = true;
    state.open->cv.notify_all();
    state.open.reset();
    return;
  }
  if (--state.running == 0) lanes_.erase(it);
}

ApplyCombinerCounters ApplyCombiner::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace shoal::hotspot
