#pragma once

// MovePacer (real-process tests, tests/cluster): holds a walk over a collection (a paged or
// streamed query) at the keys it returns, so that the balancer's moves commit while the walk is
// open, as often as it can while the walk is inside the moving bucket:
//   - the bucket of the walk's last key is moving: the walk waits until that move ends (it then
//     resumes from its cursor at the bucket's owner);
//   - a bucket ahead of the walk is moving: the walk goes on, towards it, without asking the
//     coordinator again until it gets there;
//   - no move ahead and the coordinator not balanced: the walk waits for the next move (it would
//     otherwise run to its end before the moves);
//   - balanced: the walk goes on.
// Every wait ends after kHoldLimit; the pacer stops holding after kPacingLimit in all. It reads
// the coordinator's map and progress only: the tests assert on the documents and on the moves
// that committed, never on timing.
//
// Not thread-safe: one walk, one caller.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "src/cluster/shard_map.h"
#include "src/common/point.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {

class MovePacer {
 public:
  // `page_size`: documents per page or message, for the log's page numbers.
  MovePacer(ProcessCluster& cluster, CollectionId collection, size_t page_size);

  // `key` is the walk's last key, `position` the number of documents returned so far.
  void HoldAt(const std::string& key, size_t position);

  // Moves that committed while the walk waited inside their bucket.
  [[nodiscard]] int commits_inside() const { return commits_inside_; }
  // One line per move seen and per wait, for a failure message.
  [[nodiscard]] const std::string& log() const { return log_; }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kHoldLimit = std::chrono::seconds(20);
  static constexpr auto kPacingLimit = std::chrono::seconds(45);

  // Logs each move the first time the walk sees it in flight, and where the walk was then.
  void NoteNewMoves(const cluster::ShardMap& map, Point walk, size_t position);
  void WaitForTheMoveToEnd(const cluster::BucketPlacement& moving, size_t position,
                           Clock::time_point until);

  ProcessCluster& cluster_;
  const CollectionId collection_;
  const size_t page_size_;
  const Clock::time_point give_up_;
  int commits_inside_ = 0;
  std::optional<uint64_t> moving_ahead_from_;  // the nearest moving bucket ahead of the walk
  std::set<MoveId> seen_;
  std::string log_;
};

}  // namespace shoal::cluster_test
