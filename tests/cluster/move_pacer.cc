// MovePacer: holds a walk at the keys it returns while the balancer moves buckets
// (move_pacer.h).

#include "tests/cluster/move_pacer.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "proto/shoal.pb.h"

namespace shoal::cluster_test {
namespace {

std::string Describe(const cluster::BucketPlacement& moving) {
  return fmt::format("{} of {} {} -> {} ({}, at {})", moving.transition->move.DebugString(),
                     moving.id.DebugString(), moving.transition->source.front().DebugString(),
                     moving.transition->destination.front().DebugString(),
                     cluster::ToString(moving.transition->mode),
                     cluster::ToString(moving.transition->stage));
}

}  // namespace

MovePacer::MovePacer(ProcessCluster& cluster, CollectionId collection, size_t page_size)
    : cluster_(cluster),
      collection_(collection),
      page_size_(page_size),
      give_up_(Clock::now() + kPacingLimit) {}

void MovePacer::HoldAt(const std::string& key, size_t position) {
  const Point point = PointOf(collection_, key);
  // Towards a moving bucket ahead, at full speed: it may commit before the walk gets there.
  if (moving_ahead_from_.has_value() && point.value() < *moving_ahead_from_) return;
  moving_ahead_from_.reset();
  const auto until = std::min(give_up_, Clock::now() + kHoldLimit);
  while (Clock::now() < until) {
    auto state = cluster_.State();
    auto progress = cluster_.Progress();
    if (!state.ok() || !progress.ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    NoteNewMoves(*state->map, point, position);
    const cluster::BucketPlacement& here = state->map->Lookup(point);
    if (here.transition.has_value()) {
      WaitForTheMoveToEnd(here, position, until);
      return;
    }
    for (const auto& bucket : state->map->buckets()) {
      if (bucket.transition.has_value() && bucket.range.begin() > point.value()) {
        moving_ahead_from_ =
            std::min(moving_ahead_from_.value_or(UINT64_MAX), bucket.range.begin());
      }
    }
    if (moving_ahead_from_.has_value() || progress->balanced()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void MovePacer::NoteNewMoves(const cluster::ShardMap& map, Point walk, size_t position) {
  for (const auto& bucket : map.buckets()) {
    if (!bucket.transition.has_value() || !seen_.insert(bucket.transition->move).second) {
      continue;
    }
    const char* where = bucket.range.Contains(walk)           ? "inside it"
                        : bucket.range.begin() > walk.value() ? "before it"
                                                              : "past it";
    log_ += fmt::format("  move {} seen with the walk {}, at document {} (page {})\n",
                        Describe(bucket), where, position, position / page_size_);
  }
}

void MovePacer::WaitForTheMoveToEnd(const cluster::BucketPlacement& moving, size_t position,
                                    Clock::time_point until) {
  const std::string move = Describe(moving);
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto state = cluster_.State();
    if (!state.ok()) continue;
    const cluster::BucketPlacement* now = nullptr;
    for (const auto& bucket : state->map->buckets()) {
      if (bucket.id == moving.id) now = &bucket;
    }
    if (now != nullptr && now->transition.has_value()) continue;
    const bool committed = now != nullptr && now->replicas == moving.transition->destination;
    commits_inside_ += committed ? 1 : 0;
    log_ += fmt::format("  move {} {} with the walk inside it, at document {} (page {})\n", move,
                        committed ? "committed" : "ended without a commit", position,
                        position / page_size_);
    return;
  }
  log_ += fmt::format("  move {} still in flight at document {} after the hold\n", move, position);
}

}  // namespace shoal::cluster_test
