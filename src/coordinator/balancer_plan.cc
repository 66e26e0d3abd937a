// BalancerLoop::Plan: what a rebalance would do, computed on a copy of the map. Invariants:
//   - the balancer runs with the options of the rounds (OptionsFor: the thresholds in force, the
//     bucket floor, the nodes down), so splits and merges are part of the plan, and only those
//     the rounds would make; only the limit of moves per node is lifted;
//   - it runs round after round on its own result, as the coordinator would: the moves of a
//     round are carried to their end in the copy (so that the next round may split or merge,
//     which the balancer does only once no move is in flight), a split gives each half half the
//     bytes of the bucket (the split point is chosen to halve them), a merge the sum of both;
//   - each round's moves are the steps the rounds would carry out (ExecutableStep: a primary's
//     copy replaced starts as a handoff), so the preview lists the handoffs a change makes;
//   - bytes and buckets count moves only (a split or merge moves no data);
//   - nothing changes: no edit is stored, no node is asked for more than its bucket sizes.

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "src/cluster/balancer.h"
#include "src/common/point.h"
#include "src/coordinator/balancer_loop.h"
#include "src/coordinator/executable_step.h"

namespace shoal::coordinator {
namespace {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::TransitionStage;

// At most this many balancer rounds (a plan that needs more is cut there).
constexpr int kMaxPlanRounds = 64;

// `map` with every transition carried to its end (committed and finished).
StatusOr<ShardMap> FinishTransitions(ShardMap map) {
  // kCopy to kDone is at most five steps in either mode.
  for (int step = 0; step < 8 && map.TransitionCount() > 0; ++step) {
    ShardMapEdit edit(map.epoch());
    for (const cluster::BucketPlacement& bucket : map.buckets()) {
      if (!bucket.transition.has_value()) continue;
      const cluster::BucketTransition& t = *bucket.transition;
      const std::optional<TransitionStage> next = NextStage(t.stage, t.mode);
      if (!next.has_value()) {
        return InternalError(fmt::format("plan: move {} has no next stage", t.move.value()));
      }
      switch (*next) {
        case TransitionStage::kCommitted:
          edit.CommitTransition(bucket.id, t.move);
          break;
        case TransitionStage::kDone:
          edit.FinishTransition(bucket.id, t.move);
          break;
        case TransitionStage::kCopy:
        case TransitionStage::kCatchUp:
        case TransitionStage::kPrepare:
        case TransitionStage::kCleanup:
          edit.AdvanceStage(bucket.id, t.move, *next);
          break;
        case TransitionStage::kAborted:
          return InternalError(fmt::format("plan: move {} would abort", t.move.value()));
      }
    }
    SHOAL_ASSIGN_OR_RETURN(map, cluster::Apply(map, edit));
  }
  if (map.TransitionCount() > 0) return InternalError("plan: a move does not end");
  return map;
}

// The loads of `after`, the map with the splits and merges of `plan` applied.
void SplitAndMergeLoads(const cluster::MigrationPlan& plan, const ShardMap& after,
                        cluster::LoadReport* load) {
  for (const cluster::SplitIntent& split : plan.splits) {
    cluster::BucketLoad& left = load->buckets[split.bucket];
    const BucketId upper = after.Lookup(Point(split.at)).id;
    cluster::BucketLoad& right = load->buckets[upper];
    right.bytes = left.bytes - left.bytes / 2;
    right.hits_ema = left.hits_ema / 2;
    right.split_point.reset();
    left.bytes /= 2;
    left.hits_ema /= 2;
    left.split_point.reset();
  }
  for (const cluster::MergeIntent& merge : plan.merges) {
    const cluster::BucketLoad right = load->buckets[merge.right];
    cluster::BucketLoad& left = load->buckets[merge.left];
    left.bytes += right.bytes;
    left.hits_ema += right.hits_ema;
    left.split_point.reset();
    load->buckets.erase(merge.right);
  }
}

}  // namespace

StatusOr<PlanSummary> BalancerLoop::Plan(std::optional<NodeId> add, std::optional<NodeId> remove) {
  cluster::ShardMapPtr current = committer_->map();
  if (current == nullptr) return FailedPreconditionError("the cluster is not initialized");
  ShardMapEdit edit(current->epoch());
  if (add.has_value()) edit.AddNode(*add);
  if (remove.has_value()) edit.SetNodeState(*remove, cluster::NodeState::kLeaving);
  ShardMap working = *current;
  if (!edit.empty()) {
    SHOAL_ASSIGN_OR_RETURN(working, cluster::Apply(*current, edit));
  }
  SHOAL_ASSIGN_OR_RETURN(cluster::LoadReport load, CollectLoads());
  // The rounds' options (OptionsFor: the bucket floor too, so that the preview plans no merge
  // the rounds would not make), with every move of a round at once.
  cluster::BalancerOptions balancer = OptionsFor(working);
  balancer.max_moves_per_node = 1u << 20;
  // A node the preview adds is taken as up: it may not have started yet.
  if (add.has_value()) std::erase(balancer.unavailable, *add);
  const auto is_down = [&](NodeId node) {
    return std::find(balancer.unavailable.begin(), balancer.unavailable.end(), node) !=
           balancer.unavailable.end();
  };
  PlanSummary summary;
  for (int round = 0; round < kMaxPlanRounds; ++round) {
    SHOAL_ASSIGN_OR_RETURN(working, FinishTransitions(std::move(working)));
    SHOAL_ASSIGN_OR_RETURN(cluster::MigrationPlan plan,
                           cluster::Balancer::Plan(working, load, balancer));
    // The steps the rounds would carry out (a primary's copy replaced starts as a handoff).
    std::vector<cluster::MoveIntent> steps;
    LedPrimaries led = PrimariesLed(working);
    for (const cluster::MoveIntent& planned : plan.moves) {
      std::optional<cluster::MoveIntent> step = ExecutableStep(working, planned, is_down, led);
      if (!step.has_value()) continue;
      TakeStep(*step, &led);
      steps.push_back(*std::move(step));
    }
    plan.moves = std::move(steps);
    if (plan.moves.empty() && plan.splits.empty() && plan.merges.empty()) break;
    cluster::IdSource ids{.next_move = working.NextMoveId(), .next_bucket = working.NextBucketId()};
    SHOAL_ASSIGN_OR_RETURN(ShardMapEdit begin, cluster::ToBeginEdit(working, plan, &ids));
    SHOAL_ASSIGN_OR_RETURN(ShardMap next, cluster::Apply(working, begin));
    SplitAndMergeLoads(plan, next, &load);
    working = std::move(next);
    for (cluster::MoveIntent& move : plan.moves) {
      summary.bytes += move.bytes;  // 0 for a handoff: no data moves
      ++summary.buckets;
      summary.plan.moves.push_back(std::move(move));
    }
    for (const cluster::SplitIntent& split : plan.splits) summary.plan.splits.push_back(split);
    for (const cluster::MergeIntent& merge : plan.merges) summary.plan.merges.push_back(merge);
  }
  summary.estimated_seconds =
      static_cast<double>(summary.bytes) / static_cast<double>(options_.max_bytes_per_second > 0
                                                                   ? options_.max_bytes_per_second
                                                                   : 100u << 20);
  return summary;
}

}  // namespace shoal::coordinator
