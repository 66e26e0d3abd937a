// A client that holds connections to the coordinator and to a node rides out both being SIGKILLed
// and restarted together (docs/design/network.md, "Reconnecting"), with real processes: a
// coordinator and two nodes, a client (Database::Connect, with its map watch) that has written
// and read keys of both nodes. The coordinator and node 1 are killed and restarted at once, on
// their ports (as `shoal local` does) or node 1 on a new port (its address then comes from the
// coordinator, which learns it from the node's heartbeat). The client must then complete a write
// and a read of a key of each node; the test bounds that only loosely (a loaded machine), and
// prints the times. SHOAL_RECONNECT_ROUNDS=N repeats the kill and restart N times on one cluster
// and prints the median and the maximum (the measurement of docs/results/network.md).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/client/client.h"
#include "src/common/point.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

// Generous for a loaded machine; the measured times are far below it (docs/results/network.md).
constexpr auto kBound = std::chrono::seconds(10);

int Rounds() {
  const char* rounds = std::getenv("SHOAL_RECONNECT_ROUNDS");
  return rounds == nullptr ? 1 : std::max(1, std::atoi(rounds));
}

// How long the processes stay down (SHOAL_RECONNECT_DOWN_MS, default 0: restarted at once).
int DownMillis() {
  const char* down = std::getenv("SHOAL_RECONNECT_DOWN_MS");
  return down == nullptr ? 0 : std::max(0, std::atoi(down));
}

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

enum class NodePort : uint8_t { kSame, kNew };

class ReconnectTest : public testing::TestWithParam<NodePort> {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(30).c_str());
    cluster_.reset();
  }

  // A key of `docs` whose bucket node `node` owns in the coordinator's map.
  std::string KeyOn(uint32_t node) {
    auto state = cluster_->State();
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return "";
    CollectionId docs;
    for (const auto& collection : state->collections) {
      if (collection.name == "docs") docs = collection.id;
    }
    for (int i = 0;; ++i) {
      std::string key = fmt::format("key-{}", i);
      if (client::OwnerOf(state->map->Lookup(PointOf(docs, key))) == NodeId(node)) return key;
    }
  }

  std::unique_ptr<ProcessCluster> cluster_;
};

TEST_P(ReconnectTest, AClientWritesAndReadsSoonAfterCoordinatorAndNodeRestartTogether) {
  if (GetParam() == NodePort::kSame) cluster_->KeepNodePorts();
  ASSERT_TRUE(cluster_->StartCoordinator(/*initial_nodes=*/2, /*buckets=*/4).ok());
  ASSERT_TRUE(cluster_->StartNode(1).ok());
  ASSERT_TRUE(cluster_->StartNode(2).ok());
  Status serving = cluster_->WaitServing(30);
  ASSERT_TRUE(serving.ok()) << serving;

  auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
  ASSERT_TRUE(db.ok()) << db.status();
  auto docs = (*db)->GetCollection("docs");
  ASSERT_TRUE(docs.ok()) << docs.status();
  const std::vector<std::string> keys = {KeyOn(1), KeyOn(2)};
  for (const auto& key : keys) {
    ASSERT_TRUE(docs->Upsert(key, R"({"round":0})").ok());
    ASSERT_TRUE(docs->Get(key).ok());
  }

  std::vector<double> up_ms;     // kill to both processes serving their port
  std::vector<double> again_ms;  // both serving to the client's write and read of each key
  const int rounds = Rounds();
  const auto down = std::chrono::milliseconds(DownMillis());
  for (int round = 1; round <= rounds; ++round) {
    // The client keeps working from the kill on, as an application would; this thread kills
    // and restarts (the children die with the thread that started them).
    const std::string body = fmt::format(R"({{"round":{}}})", round);
    int failures = 0;
    Status last;
    Clock::time_point done;
    std::thread client([&] {
      for (const auto& key : keys) {
        const auto give_up = Clock::now() + down + kBound;
        while (Clock::now() < give_up) {
          auto written = docs->Upsert(key, body);
          auto read = written.ok() ? docs->Get(key) : written.status();
          if (read.ok() && read->json == body) break;
          last = read.ok() ? InternalError("read " + read->json) : read.status();
          ++failures;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      done = Clock::now();
    });
    const auto killed = Clock::now();
    cluster_->Kill(kCoordinator);
    cluster_->Kill(1);
    std::this_thread::sleep_for(down);
    Status restarted = cluster_->RestartTogether({kCoordinator, 1});
    const auto up = Clock::now();
    client.join();
    ASSERT_TRUE(restarted.ok()) << restarted;
    ASSERT_LT(done - up, kBound) << "round " << round << ": " << failures
                                 << " failed tries, the last: " << last;
    up_ms.push_back(Millis(up - killed));
    again_ms.push_back(std::max(0.0, Millis(done - up)));
    std::fprintf(stderr,
                 "round %d: processes serving %.0f ms after the kill; client's write and read of "
                 "both nodes %.0f ms later (%d failed tries%s%s)\n",
                 round, up_ms.back(), again_ms.back(), failures, failures > 0 ? ", last: " : "",
                 failures > 0 ? last.ToString().c_str() : "");
  }
  std::sort(up_ms.begin(), up_ms.end());
  std::sort(again_ms.begin(), again_ms.end());
  std::fprintf(stderr,
               "%s port, %d rounds: processes serving after median %.0f ms, max %.0f ms; client "
               "again after median %.0f ms, max %.0f ms\n",
               GetParam() == NodePort::kSame ? "same" : "new", rounds, up_ms[up_ms.size() / 2],
               up_ms.back(), again_ms[again_ms.size() / 2], again_ms.back());
}

INSTANTIATE_TEST_SUITE_P(NodePorts, ReconnectTest, testing::Values(NodePort::kSame, NodePort::kNew),
                         [](const testing::TestParamInfo<NodePort>& info) {
                           return info.param == NodePort::kSame ? "SamePort" : "NewPort";
                         });

}  // namespace
}  // namespace shoal::cluster_test
