#include "src/cluster/transition.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace shoal::cluster {
namespace {

bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

std::vector<NodeId> Minus(const std::vector<NodeId>& a, const std::vector<NodeId>& b) {
  std::vector<NodeId> result;
  for (NodeId node : a) {
    if (!Contains(b, node)) result.push_back(node);
  }
  return result;
}

std::string NodeList(const std::vector<NodeId>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (NodeId node : nodes) names.push_back(node.DebugString());
  return fmt::format("[{}]", fmt::join(names, ","));
}

}  // namespace

ReadRoute ReadRouting(TransitionStage stage, TransitionMode mode) {
  switch (stage) {
    case TransitionStage::kPrepare:
      // Both modes: the source is fenced and still the only replica set that serves.
      return {.first = ReplicaRole::kSource, .fallback = std::nullopt};
    case TransitionStage::kCopy:
    case TransitionStage::kCatchUp:
      switch (mode) {
        case TransitionMode::kCopyThenSwitch:
          // The destination's staged data is invisible until the commit.
          return {.first = ReplicaRole::kSource, .fallback = std::nullopt};
        case TransitionMode::kSwitchThenCopy:
          // Paper 002 Theorem 5.3: try the new owner, then the previous owner.
          return {.first = ReplicaRole::kDestination, .fallback = ReplicaRole::kSource};
      }
      break;
    case TransitionStage::kCommitted:
    case TransitionStage::kCleanup:
    case TransitionStage::kDone:
      return {.first = ReplicaRole::kDestination, .fallback = std::nullopt};
    case TransitionStage::kAborted:
      return {.first = ReplicaRole::kSource, .fallback = std::nullopt};
  }
  // Unreachable for valid enum values; the switch above is exhaustive.
  return {.first = ReplicaRole::kSource, .fallback = std::nullopt};
}

WriteRoute WriteRouting(TransitionStage stage, TransitionMode mode) {
  switch (stage) {
    case TransitionStage::kCopy:
    case TransitionStage::kCatchUp:
      switch (mode) {
        case TransitionMode::kCopyThenSwitch:
          // Writes after the snapshot reach the destination through the catch-up log, not here.
          return {.acknowledger = ReplicaRole::kSource,
                  .mirror = std::nullopt,
                  .admission = WriteAdmission::kServe};
        case TransitionMode::kSwitchThenCopy:
          if (stage == TransitionStage::kCatchUp) {
            // The source is sealed: writes wait at the destination for the commit.
            return {.acknowledger = ReplicaRole::kDestination,
                    .mirror = std::nullopt,
                    .admission = WriteAdmission::kQueue};
          }
          // Paper 002 Theorem 5.4: writes are replicated at the previous owner until the
          // transfer is complete; the new owner is the one that acknowledges.
          return {.acknowledger = ReplicaRole::kDestination,
                  .mirror = ReplicaRole::kSource,
                  .admission = WriteAdmission::kServe};
      }
      break;
    case TransitionStage::kPrepare:
      // Both modes: the source is fenced; writes wait for the commit (copy-then-switch) or the
      // switch (switch-then-copy), or for the abort.
      return {.acknowledger = ReplicaRole::kSource,
              .mirror = std::nullopt,
              .admission = WriteAdmission::kQueue};
    case TransitionStage::kCommitted:
    case TransitionStage::kCleanup:
    case TransitionStage::kDone:
      return {.acknowledger = ReplicaRole::kDestination,
              .mirror = std::nullopt,
              .admission = WriteAdmission::kServe};
    case TransitionStage::kAborted:
      return {.acknowledger = ReplicaRole::kSource,
              .mirror = std::nullopt,
              .admission = WriteAdmission::kServe};
  }
  // Unreachable for valid enum values; the switch above is exhaustive.
  return {.acknowledger = ReplicaRole::kSource,
          .mirror = std::nullopt,
          .admission = WriteAdmission::kServe};
}

bool IsTerminal(TransitionStage stage) {
  switch (stage) {
    case TransitionStage::kCopy:
    case TransitionStage::kCatchUp:
    case TransitionStage::kPrepare:
    case TransitionStage::kCommitted:
    case TransitionStage::kCleanup:
      return false;
    case TransitionStage::kDone:
    case TransitionStage::kAborted:
      return true;
  }
  return false;
}

bool IsStorable(TransitionStage stage, TransitionMode mode) {
  // Both modes pass through every stage, in different orders (NextStage).
  (void)mode;
  return !IsTerminal(stage);
}

bool IsCommitted(TransitionStage stage) {
  switch (stage) {
    case TransitionStage::kCopy:
    case TransitionStage::kCatchUp:
    case TransitionStage::kPrepare:
    case TransitionStage::kAborted:
      return false;
    case TransitionStage::kCommitted:
    case TransitionStage::kCleanup:
    case TransitionStage::kDone:
      return true;
  }
  return false;
}

TransitionStage FirstStage(TransitionMode mode) {
  switch (mode) {
    case TransitionMode::kCopyThenSwitch:
      return TransitionStage::kCopy;
    case TransitionMode::kSwitchThenCopy:
      return TransitionStage::kPrepare;
  }
  return TransitionStage::kCopy;
}

std::optional<TransitionStage> NextStage(TransitionStage stage, TransitionMode mode) {
  switch (stage) {
    case TransitionStage::kCopy:
      switch (mode) {
        case TransitionMode::kCopyThenSwitch:
          return TransitionStage::kCatchUp;
        case TransitionMode::kSwitchThenCopy:
          return TransitionStage::kCatchUp;
      }
      break;
    case TransitionStage::kCatchUp:
      switch (mode) {
        case TransitionMode::kCopyThenSwitch:
          return TransitionStage::kPrepare;
        case TransitionMode::kSwitchThenCopy:
          return TransitionStage::kCommitted;
      }
      break;
    case TransitionStage::kPrepare:
      switch (mode) {
        case TransitionMode::kCopyThenSwitch:
          return TransitionStage::kCommitted;
        case TransitionMode::kSwitchThenCopy:
          return TransitionStage::kCopy;
      }
      break;
    case TransitionStage::kCommitted:
      return TransitionStage::kCleanup;
    case TransitionStage::kCleanup:
      return TransitionStage::kDone;
    case TransitionStage::kDone:
    case TransitionStage::kAborted:
      return std::nullopt;
  }
  return std::nullopt;
}

bool CanAbort(TransitionStage stage, TransitionMode mode) {
  (void)mode;  // the same in both modes (see the header)
  switch (stage) {
    case TransitionStage::kPrepare:
    case TransitionStage::kCopy:
    case TransitionStage::kCatchUp:
      return true;
    case TransitionStage::kCommitted:
    case TransitionStage::kCleanup:
    case TransitionStage::kDone:
    case TransitionStage::kAborted:
      return false;
  }
  return false;
}

bool AbortsOnFailure(TransitionStage stage, TransitionMode mode) {
  switch (stage) {
    case TransitionStage::kPrepare:
      return true;
    case TransitionStage::kCopy:
    case TransitionStage::kCatchUp:
      switch (mode) {
        case TransitionMode::kCopyThenSwitch:
          return true;
        case TransitionMode::kSwitchThenCopy:
          // The destination already serves: the move rolls forward.
          return false;
      }
      break;
    case TransitionStage::kCommitted:
    case TransitionStage::kCleanup:
    case TransitionStage::kDone:
    case TransitionStage::kAborted:
      return false;
  }
  return false;
}

std::string_view ToString(TransitionStage stage) {
  switch (stage) {
    case TransitionStage::kCopy:
      return "copy";
    case TransitionStage::kCatchUp:
      return "catch-up";
    case TransitionStage::kPrepare:
      return "prepare";
    case TransitionStage::kCommitted:
      return "committed";
    case TransitionStage::kCleanup:
      return "cleanup";
    case TransitionStage::kDone:
      return "done";
    case TransitionStage::kAborted:
      return "aborted";
  }
  return "invalid-stage";
}

std::string_view ToString(TransitionMode mode) {
  switch (mode) {
    case TransitionMode::kCopyThenSwitch:
      return "copy-then-switch";
    case TransitionMode::kSwitchThenCopy:
      return "switch-then-copy";
  }
  return "invalid-mode";
}

std::string_view ToString(ReplicaRole role) {
  switch (role) {
    case ReplicaRole::kSource:
      return "source";
    case ReplicaRole::kDestination:
      return "destination";
  }
  return "invalid-role";
}

const std::vector<NodeId>& BucketTransition::Replicas(ReplicaRole role) const {
  switch (role) {
    case ReplicaRole::kSource:
      return source;
    case ReplicaRole::kDestination:
      return destination;
  }
  return source;
}

std::vector<NodeId> BucketTransition::Incoming() const { return Minus(destination, source); }
std::vector<NodeId> BucketTransition::Outgoing() const { return Minus(source, destination); }

bool BucketTransition::Involves(NodeId node) const {
  return Contains(source, node) || Contains(destination, node);
}

bool BucketTransition::KeepsPrimary() const {
  return !source.empty() && !destination.empty() && source.front() == destination.front();
}

bool BucketTransition::PrimaryStaysInSync() const {
  return !destination.empty() && Contains(source, destination.front());
}

std::string BucketTransition::DebugString() const {
  return fmt::format("{}{{{} {}->{} {}}}", move.DebugString(), ToString(mode), NodeList(source),
                     NodeList(destination), ToString(stage));
}

}  // namespace shoal::cluster
