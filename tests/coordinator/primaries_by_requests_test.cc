// Primaries placed by the requests they serve (docs/design/replication.md §7, "Primaries by
// requests"), in an embedded K = 3 cluster: the nodes report each bucket's read and write rates
// (node::RequestRates), the balancer sums a bucket's rates over its copies and hands primaries
// from the node whose primaries carry the most requests to its backups until no handoff lowers
// the spread by more than half a bucket's mean load. Reads, or writes, that all hit one node's
// primaries end spread over the nodes, and then stay put: the handoffs do not flap while the
// load is steady.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

class PrimariesByRequestsTest : public CoordinatorTest {
 protected:
  PrimariesByRequestsTest() { replication_factor_ = 3; }

  // Per node: how many of `buckets` it is the primary of.
  std::map<NodeId, int> PrimariesOf(const std::set<BucketId>& buckets) {
    std::map<NodeId, int> out;
    for (const auto& node : map()->nodes()) out[node.id] = 0;
    for (BucketId id : buckets) ++out[map()->Find(id)->replicas.front()];
    return out;
  }

  static int Spread(const std::map<NodeId, int>& counts) {
    const auto [low, high] =
        std::minmax_element(counts.begin(), counts.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
    return high->second - low->second;
  }

  // Loads every document of the buckets n1 is the primary of with gets, or with updates that
  // rewrite each document's body, and expects their primaries to spread and then stay.
  void ExpectHotPrimariesSpread(bool writes) {
    Run(/*auto_balance=*/true, [&] {
      ASSERT_TRUE(
          WaitFor([&] { return FullyReplicated() && coordinator().Balanced().value_or(false); },
                  30 * kSecond));
      // The hot set: every document of the buckets n1 is the primary of.
      std::set<BucketId> hot;
      for (const auto& bucket : map()->buckets()) {
        if (bucket.replicas.front() == kN1) hot.insert(bucket.id);
      }
      ASSERT_GE(hot.size(), 2u);
      std::vector<int> documents;
      for (int i = 0; i < kDocuments; ++i) {
        if (hot.contains(map()->Lookup(PointOf(collection_, Key(i))).id)) documents.push_back(i);
      }
      ASSERT_FALSE(documents.empty());
      std::printf("%zu hot buckets with %zu documents, all with primaries on n1\n", hot.size(),
                  documents.size());

      bool stop = false;
      bool done = false;
      uint64_t requests = 0;
      auto loader = std::make_shared<client::Client>(sim_);
      sim_.Spawn(Address::Client(3), "loader", [&, loader, writes, c = collection_] {
        while (!stop) {
          for (int i : documents) {
            const bool ok =
                writes ? loader->Update(c, Key(i), Body(i)).ok() : loader->Get(c, Key(i)).ok();
            if (ok) ++requests;
          }
          if (!sim_.Sleep(kMs).ok()) break;
        }
        done = true;
      });

      const Micros started = sim_.Now();
      ASSERT_TRUE(WaitFor([&] { return Spread(PrimariesOf(hot)) <= 1; }, 60 * kSecond));
      std::printf("hot primaries spread %lld ms after the %s began (%llu of them)\n",
                  static_cast<long long>((sim_.Now() - started) / kMs), writes ? "writes" : "reads",
                  static_cast<unsigned long long>(requests));
      EXPECT_LT(PrimariesOf(hot)[kN1], static_cast<int>(hot.size()));

      // A steady load, no flapping: for 10 s (a hundred balancer rounds) the hot primaries neither
      // move nor change term.
      std::map<BucketId, std::pair<NodeId, Term>> settled;
      for (BucketId id : hot)
        settled[id] = {map()->Find(id)->replicas.front(), map()->Find(id)->term};
      const uint64_t requests_before = requests;
      ASSERT_TRUE(sim_.Sleep(10 * kSecond).ok());
      EXPECT_GT(requests, requests_before);
      for (BucketId id : hot) {
        EXPECT_EQ(map()->Find(id)->replicas.front(), settled[id].first) << id.DebugString();
        EXPECT_EQ(map()->Find(id)->term, settled[id].second) << id.DebugString();
      }
      EXPECT_LE(Spread(PrimariesOf(hot)), 1);

      stop = true;
      ASSERT_TRUE(WaitFor([&] { return done; }));
      ExpectAllDocumentsReadable();
    });
  }
};

TEST_F(PrimariesByRequestsTest, ReadsOnOneNodesPrimariesEndSpreadOverTheNodes) {
  ExpectHotPrimariesSpread(/*writes=*/false);
}

TEST_F(PrimariesByRequestsTest, WritesOnOneNodesPrimariesEndSpreadOverTheNodes) {
  ExpectHotPrimariesSpread(/*writes=*/true);
}

}  // namespace
}  // namespace shoal::coordinator
