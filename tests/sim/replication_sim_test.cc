// Targeted K = 3 scenarios of docs/design/replication.md §9 that need the simulation's link
// partitions and per-process clocks (SimRuntime::CutLink, SimRuntime::SetClock), on the embedded
// cluster of the coordinator fixture (three nodes, every bucket on all three, min_in_sync 2):
//   - the primary crashes after one backup applied a write, and that backup — the most advanced
//     copy — is cut off from the coordinator at the failover (§4.2 step 4, §4.3): the other
//     backup is promoted, the cut-off one is rebuilt, its extra entry never becomes visible, no
//     acknowledged write is lost and every copy ends equal;
//   - a failover that stopped after sealing a backup which then forgot the seal: the primary
//     it refused closes its term and reports it, so the coordinator ends it (§4.8);
//   - the read lease's clock assumption (§5: drift within ε = 10% of L): a primary cut off from
//     its backups and the coordinator, whose clock runs 3% slow, has stopped acknowledging
//     before a backup is promoted; at 50% slow it still holds its lease after the promotion,
//     so two nodes may acknowledge writes at once and a client that still routes to it reads a
//     value older than an acknowledged write: the per-key linearizability checker rejects that
//     history. The assumption matters.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "tests/sim/linearizability.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

class ReplicationSimTest : public CoordinatorTest {
 protected:
  ReplicationSimTest() { replication_factor_ = 3; }

  // A loaded document of `bucket` (-1 if none).
  int DocumentOf(BucketId bucket) {
    for (int i = 0; i < kDocuments; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).id == bucket) return i;
    }
    return -1;
  }

  // How many nodes may acknowledge a write to `point` now, each asked as itself (on its own
  // clock), as the simulation's R1 check does (tests/sim/cluster_sim.cc SafetyLoop).
  int Acknowledgers(Point point) {
    int count = 0;
    for (NodeId id : {kN1, kN2, kN3}) {
      auto node = cluster_->node(id);
      if (node == nullptr || !sim_.IsAlive(Address::Node(id))) continue;
      bool can = false;
      sim_.RunAs(Address::Node(id), [&] { can = node->CanAcknowledgeWrite(point); });
      count += can ? 1 : 0;
    }
    return count;
  }
};

// replication.md §9: "Primary crashes after some backups applied; the most advanced is cut off at
// the failover". b0 = [n1, n2, n3]. The link n1 -> n3 is cut, so an update of a document of b0
// reaches n2 only and is never acknowledged (write-all waits for n3). n2 is cut from the
// coordinator and n1 crashes: the failover's seal reaches only n3, so n3 is promoted although n2
// holds more, and n2 leaves b0 in the same edit. Once the links heal and n1 restarts, the copies
// on n1 and n2 are rebuilt from n3: the update (outcome unknown, so either result would be
// allowed) is never read from any copy, and every copy of every bucket ends equal to its primary's.
TEST_F(ReplicationSimTest, MostAdvancedBackupPartitionedAtFailover) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_EQ(map()->Find(kB0)->replicas, (std::vector<NodeId>{kN1, kN2, kN3}));
    const int doc = DocumentOf(kB0);
    ASSERT_GE(doc, 0);
    // The writer keeps off b0, so that the update below is the only entry n2 holds beyond n3.
    std::vector<int> others;
    for (int i = 0; i < kDocuments; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).id != kB0) others.push_back(i);
    }
    auto w = StartRoundWriter(others, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));

    const Address n1 = Address::Node(kN1), n2 = Address::Node(kN2), n3 = Address::Node(kN3);
    sim_.CutLink(n1, n3);
    const std::string lost_body = R"({"lost":true})";
    bool update_done = false;
    Status update_status;
    sim_.Spawn(Address::Client(3), "unacked-update", [&, c = collection_] {
      client::Client writer(sim_);
      update_status = writer.Update(c, Key(doc), lost_body).status();
      update_done = true;
    });
    // n2 applied the update, n3 did not.
    auto* n2_store = cluster_->node(kN2)->store();
    auto* n3_store = cluster_->node(kN3)->store();
    ASSERT_TRUE(WaitFor(
        [&] {
          return n2_store->GetReplicaState(kB0).position > n3_store->GetReplicaState(kB0).position;
        },
        5 * kSecond));
    const storage::ReplicaPosition n2_at = n2_store->GetReplicaState(kB0).position;
    ASSERT_FALSE(update_done) << "acknowledged without n3: " << update_status;
    const Term old_term = map()->Find(kB0)->term;

    // The failover: n2 cannot hear the coordinator's seal, n1 is gone.
    sim_.CutLinks(n2, {Address::Coordinator()}, transport::LinkDirection::kBoth);
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    sim_.HealLink(n1, n3);
    ASSERT_TRUE(WaitFor([&] { return map()->Find(kB0)->term > old_term; }, 20 * kSecond));
    const cluster::BucketPlacement promoted = *map()->Find(kB0);
    EXPECT_EQ(promoted.replicas.front(), kN3) << promoted.DebugString();
    EXPECT_FALSE(promoted.HasReplica(kN2)) << promoted.DebugString();
    EXPECT_LT(n3_store->GetReplicaState(kB0).position, n2_at);
    ASSERT_TRUE(WaitFor([&] { return update_done; }));
    EXPECT_FALSE(update_status.ok());

    // The cut ends, n1 comes back: both are rebuilt.
    sim_.HealAllLinks();
    ASSERT_TRUE(cluster_->StartNode(kN1).ok());
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, others);
    ExpectCopiesEqual();
    // The update n2 applied is on no copy: every copy of b0 reads the document's loaded body.
    client::Client reader(sim_);
    auto got = reader.Get(collection_, Key(doc));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, Body(doc));
    for (int round = 0; round < 3 * 3; ++round) {
      auto any = reader.GetAnyReplica(collection_, Key(doc));
      ASSERT_TRUE(any.ok()) << any.status();
      EXPECT_EQ(any->body, Body(doc));
    }
  });
}

// A failover that stopped after its seal, whose sealed backup then restarts (replication.md
// §4.8, "Seals"): n1 and n2 are cut from the coordinator, which fails n1's buckets over, seals n3
// alone (n2 is silent too) and crashes right after. n3 refuses n1's stream as sealed, so n1
// abandons those buckets' pending writes: no write can commit at their terms any more. n3
// restarts, the links heal, a new coordinator starts, which knows nothing of the seal, and n1 is
// healthy. n1 closes its terms and reports them in its heartbeats (as a sealed backup that left
// the bucket could not), and so does n3, whose seal is durable; the coordinator fails them over.
// (The K = 3 simulation found the bucket frozen for good without that, seeds 77, 122 and 125 with
// partitions: every read of a key with an abandoned write and every write waited forever.)
TEST_F(ReplicationSimTest, APrimaryWhoseSealedBackupForgotTheSealClosesTheTerm) {
  bool crashed = false;
  sim_.SetChaosHook([&](const Address& process, std::string_view name) {
    if (crashed || process != Address::Coordinator() || name != "coordinator.after_seal") {
      return false;
    }
    crashed = true;
    return true;
  });
  Run(/*auto_balance=*/true, [&] {
    std::map<BucketId, Term> led;  // n1's buckets, at their terms
    for (const auto& bucket : map()->buckets()) {
      if (bucket.replicas.front() == kN1) led[bucket.id] = bucket.term;
    }
    ASSERT_FALSE(led.empty());
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const Address coordinator_address = Address::Coordinator();
    sim_.CutLinks(Address::Node(kN1), {coordinator_address}, transport::LinkDirection::kBoth);
    sim_.CutLinks(Address::Node(kN2), {coordinator_address}, transport::LinkDirection::kBoth);
    ASSERT_TRUE(WaitFor([&] { return crashed; }, 20 * kSecond));
    ASSERT_TRUE(sim_.Sleep(200 * kMs).ok());  // n1 meets the seal
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    sim_.HealAllLinks();
    ASSERT_TRUE(cluster_->StartCoordinator().ok());
    ASSERT_TRUE(WaitFor([&] { return coordinator().recovered(); }));
    // Every term n1 held ends.
    ASSERT_TRUE(WaitFor(
        [&] {
          return std::all_of(led.begin(), led.end(), [&](const auto& at) {
            return map()->Find(at.first)->term > at.second;
          });
        },
        20 * kSecond));
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
  sim_.SetChaosHook(nullptr);
}

// The clock assumption of the read lease (replication.md §5), shown both ways by one scenario: n1,
// the primary of b0, is cut off from its backups and the coordinator but not from clients, with
// its clock running at `primary_rate`. After the promotion, a fresh client updates a document of
// b0 at the new primary, then the fixture's client, whose map still names n1, reads it.
struct DriftOutcome {
  int max_acknowledgers = 0;  // nodes that may acknowledge a write to b0 at once
  bool stale_read = false;    // the read after the acknowledged update returned the old body
  bool linearizable = true;   // the per-key checker's verdict on the document's history
};

class ReplicationDriftTest : public ReplicationSimTest {
 protected:
  DriftOutcome RunIsolatedPrimary(double primary_rate) {
    sim_.SetClock(Address::Node(kN1), transport::SimClock{.rate = primary_rate, .offset = 0});
    DriftOutcome outcome;
    Run(/*auto_balance=*/false, [&] {
      ASSERT_EQ(map()->Find(kB0)->replicas.front(), kN1);
      const int doc = DocumentOf(kB0);
      ASSERT_GE(doc, 0);
      const Point point = PointOf(collection_, Key(doc));
      sim::HistoryRecorder history;
      auto read = [&](client::Client& c, uint64_t who) {
        const Micros call = sim_.TrueNow();
        auto got = c.Get(collection_, Key(doc));
        auto handle = history.Begin(Key(doc), who, sim::OpKind::kGet, "", "", call);
        if (got.ok()) {
          history.End(handle, sim::OpOutcome::kOk, got->body, sim_.TrueNow());
        } else {
          history.EndUnknown(handle);
        }
        return got;
      };
      // n1 serves the read under a lease its backups just renewed.
      auto first = read(*client_, 1);
      ASSERT_TRUE(first.ok()) << first.status();
      ASSERT_EQ(first->body, Body(doc));

      // R1 watched every 5 ms from here to the end. The watcher may wake once more after this
      // task returned: what it reads and writes lives on the heap.
      struct Watch {
        bool on = true;
        int max_acknowledgers = 0;
      };
      auto watch = std::make_shared<Watch>();
      sim_.Spawn(Address::Client(901), "r1", [this, watch, point] {
        while (watch->on && sim_.Sleep(5 * kMs).ok()) {
          watch->max_acknowledgers = std::max(watch->max_acknowledgers, Acknowledgers(point));
        }
      });
      sim_.CutLinks(Address::Node(kN1),
                    {Address::Node(kN2), Address::Node(kN3), Address::Coordinator()},
                    transport::LinkDirection::kBoth);
      ASSERT_TRUE(WaitFor([&] { return map()->Find(kB0)->replicas.front() != kN1; }, 20 * kSecond));

      client::Client fresh(sim_);
      const std::string body = R"({"after":"failover"})";
      const Micros call = sim_.TrueNow();
      auto updated = fresh.Update(collection_, Key(doc), body);
      auto handle = history.Begin(Key(doc), 2, sim::OpKind::kUpdate, body, "", call);
      ASSERT_TRUE(updated.ok()) << updated.status();
      history.End(handle, sim::OpOutcome::kOk, "", sim_.TrueNow());
      // A moment later (the checker orders only ops apart in time).
      ASSERT_TRUE(sim_.Sleep(kMs).ok());
      auto stale = read(*client_, 1);
      outcome.stale_read = stale.ok() && stale->body == Body(doc);
      ASSERT_TRUE(sim_.Sleep(2 * kSecond).ok());  // past the old lease, however slow n1's clock
      watch->on = false;
      outcome.max_acknowledgers = watch->max_acknowledgers;
      sim_.HealAllLinks();

      sim::CheckOptions check;
      check.initial_value = Body(doc);
      const auto summary = history.CheckAll(check);
      outcome.linearizable = summary.ok();
      if (!summary.ok()) std::printf("the checker: %s\n", summary.DebugString().c_str());
    });
    return outcome;
  }
};

// 3% slow, within ε / L = 10%: n1's lease ran out before the failover's wait did.
TEST_F(ReplicationDriftTest, DriftWithinEpsilonIsSafe) {
  const DriftOutcome outcome = RunIsolatedPrimary(0.97);
  EXPECT_EQ(outcome.max_acknowledgers, 1);
  EXPECT_FALSE(outcome.stale_read);
  EXPECT_TRUE(outcome.linearizable);
}

// 50% slow, far beyond ε: n1's lease of L - ε = 0.9 s on its clock lasts 1.8 s, longer than
// failover_timeout + L + ε on the coordinator's; the checks catch it.
TEST_F(ReplicationDriftTest, DriftBeyondEpsilonServesAStaleRead) {
  const DriftOutcome outcome = RunIsolatedPrimary(0.5);
  EXPECT_EQ(outcome.max_acknowledgers, 2);
  EXPECT_TRUE(outcome.stale_read);
  EXPECT_FALSE(outcome.linearizable);
}

}  // namespace
}  // namespace shoal::coordinator
