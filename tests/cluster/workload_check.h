#pragma once

// The end-of-test checks the real-process tests share (fault_test.cc, failover_test.cc): nothing
// acknowledged by the workload is lost, and every node holds exactly the buckets of the
// coordinator's one map. Each records gtest failures (EXPECT) rather than returning a status, so
// that one test reports every broken property at once.
//
// Thread-safety: called from the test's main thread, after Workload::Stop.

#include "include/shoal/shoal.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"

namespace shoal::cluster_test {

// Expects more than 100 acknowledged writes and, reading every key through `db` (or a new
// client) for up to 20 s each: 0 lost writes, 0 resurrected deletes, 0 unreadable keys. Prints
// the counts to stderr.
void ExpectNoLoss(Workload& workload, Database* db);

// Expects, within 10 s, that no move is in flight and every node holds exactly the buckets the
// coordinator's map gives it (ProcessCluster::MapDisagreement is empty).
void ExpectOneMap(ProcessCluster& cluster);

}  // namespace shoal::cluster_test
