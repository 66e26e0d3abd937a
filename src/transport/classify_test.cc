#include "src/transport/classify.h"

#include <gtest/gtest.h>

#include "src/storage/errors.h"
#include "src/transport/messages.h"

namespace shoal::transport {
namespace {

// The table of classify.h, row by row, for both kinds of request.
TEST(ClassifyTest, TheTable) {
  struct Row {
    Status status;
    StatusOrigin origin;
    RetryAction idempotent;
    RetryAction not_idempotent;
  };
  const Row rows[] = {
      {OkStatus(), StatusOrigin::kCall, RetryAction::kDone, RetryAction::kDone},
      {OkStatus(), StatusOrigin::kAnswer, RetryAction::kDone, RetryAction::kDone},
      {MakeStatus(StatusCode::kCancelled, "stopping"), StatusOrigin::kCall, RetryAction::kGiveUp,
       RetryAction::kGiveUp},
      {UnavailableError("not sent"), StatusOrigin::kCall, RetryAction::kResend,
       RetryAction::kResend},
      {MakeStatus(StatusCode::kDeadlineExceeded, "lost"), StatusOrigin::kCall, RetryAction::kResend,
       RetryAction::kUnknownOutcome},
      {MakeStatus(StatusCode::kResourceExhausted, "too big"), StatusOrigin::kCall,
       RetryAction::kGiveUp, RetryAction::kGiveUp},
      {MakeClusterError(ClusterError::kWrongShard, "moved"), StatusOrigin::kAnswer,
       RetryAction::kLearnRoute, RetryAction::kLearnRoute},
      {MakeClusterError(ClusterError::kNotServing, "fenced"), StatusOrigin::kAnswer,
       RetryAction::kBackOff, RetryAction::kBackOff},
      {storage::StorageError(storage::ErrorReason::kUnavailable, "busy"), StatusOrigin::kAnswer,
       RetryAction::kBackOff, RetryAction::kBackOff},
      {MakeStatus(StatusCode::kNotFound, "nothing stored"), StatusOrigin::kAnswer,
       RetryAction::kGiveUp, RetryAction::kGiveUp},
      {MakeClusterError(ClusterError::kStaleMove, "old move"), StatusOrigin::kAnswer,
       RetryAction::kGiveUp, RetryAction::kGiveUp},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.status.ToString());
    EXPECT_EQ(Classify(row.status, row.origin, /*idempotent=*/true), row.idempotent);
    EXPECT_EQ(Classify(row.status, row.origin, /*idempotent=*/false), row.not_idempotent);
  }
}

TEST(ClassifyTest, OnlyResendAndBackOffBackOff) {
  EXPECT_TRUE(BacksOff(RetryAction::kResend));
  EXPECT_TRUE(BacksOff(RetryAction::kBackOff));
  EXPECT_FALSE(BacksOff(RetryAction::kDone));
  EXPECT_FALSE(BacksOff(RetryAction::kLearnRoute));
  EXPECT_FALSE(BacksOff(RetryAction::kUnknownOutcome));
  EXPECT_FALSE(BacksOff(RetryAction::kGiveUp));
}

TEST(ClassifyTest, OutcomeUnknownKeepsTheCause) {
  const Status unknown = OutcomeUnknown(MakeStatus(StatusCode::kDeadlineExceeded, "no reply"));
  EXPECT_EQ(unknown.code(), StatusCode::kUnknown);
  EXPECT_NE(std::string(unknown.message()).find("no reply"), std::string::npos);
}

}  // namespace
}  // namespace shoal::transport
