#include "tests/cluster/workload_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace shoal::cluster_test {

void ExpectNoLoss(Workload& workload, Database* db) {
  EXPECT_GT(workload.acknowledged(), 100u);
  const VerifyResult verified = workload.Verify(db, 20);
  EXPECT_EQ(verified.lost_writes, 0u) << verified.first_problem;
  EXPECT_EQ(verified.resurrected_deletes, 0u) << verified.first_problem;
  EXPECT_EQ(verified.unreadable, 0u) << verified.first_problem;
  std::fprintf(stderr, "workload: %llu acknowledged, %llu unknown outcomes, %llu keys\n",
               static_cast<unsigned long long>(workload.acknowledged()),
               static_cast<unsigned long long>(workload.uncertain()),
               static_cast<unsigned long long>(verified.keys));
}

void ExpectOneMap(ProcessCluster& cluster) {
  // A source drops a moved bucket soon after DONE: give it a moment.
  std::string disagreement = cluster.MapDisagreement();
  for (int i = 0; i < 100 && !disagreement.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    disagreement = cluster.MapDisagreement();
  }
  EXPECT_EQ(disagreement, "");
}

}  // namespace shoal::cluster_test
