// Real-process tests of queries during bucket moves (docs/design/failure-patterns.md, Field
// note B): a coordinator and storage nodes as separate `shoal` processes on loopback, 2,400
// documents of known keys and bodies that nothing writes after loading them (the untouched set),
// and a query over the whole collection from the network client (Database::Connect), paged or
// streamed, open while the balancer moves buckets to a joining node, or while the source of a
// move is SIGKILLed after its fence and restarted. Each walk must return every untouched
// document exactly once, with its body, in the order of a walk of the quiet cluster, and no key
// twice.
//
// The walks are paced by the coordinator's map and progress (MovePacer), and the moves by
// failpoint pauses that keep each one in flight for a second: the assertions are about the
// documents returned, and about the moves that committed while the query was open (the
// coordinator's moves-committed counter), never about timing.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "proto/shoal.pb.h"
#include "src/common/point.h"
#include "src/net/grpc_runtime.h"
#include "tests/cluster/move_pacer.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"
#include "tests/cluster/workload_check.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kInitialNodes = 3;
constexpr uint32_t kJoiner = 4;
// 12 buckets on 3 nodes: node 4's join moves 3 of them (a switch-then-copy bootstrap, then
// copy-then-switch moves).
constexpr uint32_t kBuckets = 12;
constexpr int kDocuments = 2400;
// Documents per page (and per streamed message): a bucket spans about 10 of them, so that a
// walk waits inside a bucket while it moves.
constexpr uint32_t kPageSize = 20;
// The workload's collection: its writers run on keys of their own there (tests with a workload).
constexpr std::string_view kCollection = "faults";
// A source pauses this long after the fence of a move: the test SIGKILLs it there, or waits.
constexpr std::string_view kSourceFencePause = "source.after_fence=pause:1000";
// Each move waits 1 s with both copies serving, so that a walk can reach the moving bucket
// before the commit: a copy-then-switch move after its ingest (the source serving), a
// switch-then-copy move after its switch (the destination serving through the source).
constexpr std::string_view kMovePauses =
    "coordinator.after_ingest=pause:1000,coordinator.after_switch=pause:1000";

std::string ScanKey(int i) { return fmt::format("scan-{:05}", i); }

std::string ScanBody(int i) {
  return fmt::format(R"({{"key": "{}", "i": {}, "pad": "{}"}})", ScanKey(i), i,
                     std::string(1000, 'p'));
}

bool IsWorkloadKey(const std::string& key) {
  return key.starts_with('t') && key.find("-k") != std::string::npos;
}

bool IsRetryable(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The untouched documents: key -> body as loaded.
using Untouched = std::map<std::string, std::string>;

// Checks one walk over the collection, complete or cut short: no key comes back twice, every
// untouched key with its loaded body, and any other key only if it is a workload key and
// `workload_keys_allowed`. Returns the untouched keys in walk order. A key's position in the
// messages is its index in the walk (its page: index / kPageSize).
std::vector<std::string> CheckWalk(const std::vector<Document>& walk, const Untouched& untouched,
                                   bool workload_keys_allowed, std::string_view label) {
  std::map<std::string, size_t> first_position;
  std::vector<std::string> untouched_order;
  for (size_t i = 0; i < walk.size(); ++i) {
    const Document& doc = walk[i];
    auto [at, first] = first_position.emplace(doc.key, i);
    if (!first) {
      ADD_FAILURE() << label << ": " << doc.key << " repeated at position " << i << " (page "
                    << i / kPageSize << "), first at position " << at->second << " (page "
                    << at->second / kPageSize << ")";
      continue;
    }
    auto loaded = untouched.find(doc.key);
    if (loaded == untouched.end()) {
      if (!workload_keys_allowed || !IsWorkloadKey(doc.key)) {
        ADD_FAILURE() << label << ": unexpected key " << doc.key << " at position " << i;
      }
      continue;
    }
    untouched_order.push_back(doc.key);
    if (nlohmann::json::parse(doc.json, nullptr, false) !=
        nlohmann::json::parse(loaded->second, nullptr, false)) {
      ADD_FAILURE() << label << ": " << doc.key << " at position " << i << " holds " << doc.json;
    }
  }
  return untouched_order;
}

// `walked` (the untouched keys of a walk) is `reference` (those of a walk of the quiet cluster)
// when `complete`, else a prefix of it: nothing skipped up to where the walk stopped.
void ExpectSameOrder(const std::vector<std::string>& walked,
                     const std::vector<std::string>& reference, bool complete,
                     std::string_view label) {
  for (size_t i = 0; i < walked.size() && i < reference.size(); ++i) {
    if (walked[i] != reference[i]) {
      const bool later = std::find(walked.begin() + static_cast<std::ptrdiff_t>(i), walked.end(),
                                   reference[i]) != walked.end();
      ADD_FAILURE() << label << ": untouched key " << i << " is " << walked[i] << ", expected "
                    << reference[i] << (later ? " (returned later)" : " (skipped)");
      return;
    }
  }
  if (complete) {
    EXPECT_EQ(walked.size(), reference.size())
        << label << ": untouched keys returned; the first missing is "
        << (walked.size() < reference.size() ? reference[walked.size()] : "none");
  } else {
    EXPECT_LE(walked.size(), reference.size()) << label;
  }
}

// A paged walk: the documents of every page read, and every page read that failed.
struct PagedWalk {
  std::vector<Document> documents;
  int pages = 0;
  std::vector<Status> failures;
  bool last_read_failed = false;
};

class ScanDuringMoveTest : public testing::Test {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    workload_.reset();
    collection_.reset();
    db_.reset();
    cluster_.reset();
  }

  // The coordinator and nodes 1..3, node 4 started but not yet in the map, kDocuments untouched
  // documents loaded and, with `workload`, writers on keys of their own; then balanced.
  void StartLoadedCluster(bool workload) {
    ASSERT_TRUE(cluster_->StartCoordinator(kInitialNodes, kBuckets).ok());
    for (uint32_t id = 1; id <= kInitialNodes; ++id) {
      Status started = cluster_->StartNode(id);
      ASSERT_TRUE(started.ok()) << started;
    }
    Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
    Status joiner = cluster_->StartNode(kJoiner);
    ASSERT_TRUE(joiner.ok()) << joiner;
    auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    auto collection = db_->GetCollection(kCollection);
    ASSERT_TRUE(collection.ok()) << collection.status();
    collection_ = *collection;
    std::vector<BatchWrite> batch;
    for (int i = 0; i < kDocuments; ++i) {
      untouched_[ScanKey(i)] = ScanBody(i);
      batch.push_back(BatchWrite{
          .op = BatchOp::kInsert, .key = ScanKey(i), .json = ScanBody(i), .expected_version = 0});
      if (batch.size() < 200 && i + 1 < kDocuments) continue;
      auto written = collection_->Batch(batch);
      ASSERT_TRUE(written.ok()) << written.status();
      for (const auto& result : *written) ASSERT_TRUE(result.ok()) << result.status();
      batch.clear();
    }
    auto state = cluster_->State();
    ASSERT_TRUE(state.ok()) << state.status();
    for (const auto& spec : state->collections) {
      if (spec.name == kCollection) collection_id_ = spec.id;
    }
    if (workload) {
      workload_ =
          std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(), /*threads=*/2,
                                     /*keys_per_thread=*/150);
      Status started = workload_->Start();
      ASSERT_TRUE(started.ok()) << started;
    }
    ASSERT_NO_FATAL_FAILURE(WaitForLoad(20));
    ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));
  }

  // StartLoadedCluster, then the walk order of the quiet cluster in reference_, then the
  // coordinator's failpoints set to `pauses`, which hold its moves.
  void StartPausedCluster(bool workload, const std::string& pauses = std::string(kMovePauses)) {
    ASSERT_NO_FATAL_FAILURE(StartLoadedCluster(workload));
    reference_ = ReferenceOrder();
    const Status paused = cluster_->SetCoordinatorFailpoints(kCoordinator, pauses);
    ASSERT_TRUE(paused.ok()) << paused;
  }

  void WaitForLoad(int seconds) {
    const Status s = cluster_->AwaitLoadReported(std::chrono::seconds(seconds));
    ASSERT_TRUE(s.ok()) << s;
  }

  void WaitBalanced(int seconds) {
    const Status s = cluster_->AwaitBalanced(std::chrono::seconds(seconds));
    ASSERT_TRUE(s.ok()) << s;
  }

  // A walk's pacing: the first call adds node 4 (its join moves buckets while the walk is open),
  // every later one holds the walk at its last key (MovePacer).
  std::function<void(const std::string&, size_t)> JoinThenPace(MovePacer& pacer) {
    return [this, &pacer, added = false](const std::string& key, size_t position) mutable {
      if (!added) {
        added = true;
        Status joined = cluster_->AddNode(kJoiner);
        EXPECT_TRUE(joined.ok()) << joined;
        return;
      }
      pacer.HoldAt(key, position);
    };
  }

  // After a walk that moves were paced into: at least one move committed while it was open
  // (`committed_during`, read as it ended), at least one with the walk inside the moving bucket;
  // then the cluster settles on one map.
  void ExpectMovesDuringTheWalk(const MovePacer& pacer, uint64_t committed_during,
                                const std::string& walk_summary) {
    std::fprintf(stderr, "%s; %llu moves committed during the query:\n%s", walk_summary.c_str(),
                 static_cast<unsigned long long>(committed_during), pacer.log().c_str());
    EXPECT_GE(committed_during, 1u) << "moves committed while the query was open";
    EXPECT_GE(pacer.commits_inside(), 1) << "moves committed with the walk inside their bucket";
    ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));
    ExpectOneMap(*cluster_);
  }

  uint64_t MovesCommitted() {
    auto progress = cluster_->Progress();
    EXPECT_TRUE(progress.ok()) << progress.status();
    return progress.ok() ? progress->moves_committed() : 0;
  }

  // The untouched keys in the order of a walk of the quiet cluster (1,000 a page).
  std::vector<std::string> ReferenceOrder() {
    std::vector<Document> walk;
    QueryOptions options{.filter = {}, .limit = 1000, .cursor = ""};
    do {
      auto page = collection_->Query(options);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      walk.insert(walk.end(), page->documents.begin(), page->documents.end());
      options.cursor = page->next_cursor;
    } while (!options.cursor.empty());
    std::vector<std::string> order =
        CheckWalk(walk, untouched_, workload_ != nullptr, "reference walk");
    EXPECT_EQ(order.size(), untouched_.size());
    return order;
  }

  // A paged walk from the start, kPageSize a page. Before each read but the first,
  // `before_read` gets the walk so far (pacing and faults). A failed read is read again from the
  // same cursor (the walk resumes where it stopped), at most 40 times in all.
  PagedWalk WalkPages(const std::function<void(const PagedWalk&)>& before_read) {
    PagedWalk walk;
    QueryOptions options{.filter = {}, .limit = kPageSize, .cursor = ""};
    while (true) {
      if (walk.pages > 0 || !walk.failures.empty()) before_read(walk);
      auto page = collection_->Query(options);
      walk.last_read_failed = !page.ok();
      if (!page.ok()) {
        walk.failures.push_back(page.status());
        if (walk.failures.size() >= 40) {
          ADD_FAILURE() << "the walk gave up at page " << walk.pages << ": " << page.status();
          return walk;
        }
        continue;
      }
      ++walk.pages;
      walk.documents.insert(walk.documents.end(), page->documents.begin(), page->documents.end());
      if (page->next_cursor.empty()) return walk;
      options.cursor = page->next_cursor;
    }
  }

  // A streamed walk from the start, kPageSize a message; `every_message` gets the documents so
  // far after each kPageSize of them (pacing and faults). The walk's documents and its status.
  std::pair<std::vector<Document>, Status> WalkStream(
      const std::function<void(const std::vector<Document>&)>& every_message) {
    std::vector<Document> documents;
    Status status = collection_->QueryStream({.filter = {}, .limit = kPageSize, .cursor = ""},
                                             [&](const Document& doc) {
                                               documents.push_back(doc);
                                               if (documents.size() % kPageSize == 0)
                                                 every_message(documents);
                                               return OkStatus();
                                             });
    return {std::move(documents), status};
  }

  // Nodes 1..3 pause after the fence of every move they are the source of; node 4 joins; the
  // first of them to pause there in a copy-then-switch move is SIGKILLed, in the middle of the
  // move: fenced, its destination holding a full copy, not committed. Pauses in other moves
  // (node 4's switch-then-copy bootstrap) are waited out. The others' failpoints are then
  // switched off. The killed node, or 0 (with a failure).
  uint32_t KillASourceAfterTheFenceOfACopyThenSwitchMove() {
    for (uint32_t id = 1; id <= kInitialNodes; ++id) {
      Status armed = cluster_->SetNodeFailpoints(id, std::string(kSourceFencePause));
      if (!armed.ok()) {
        ADD_FAILURE() << "failpoints of node " << id << ": " << armed;
        return 0;
      }
    }
    Status added = cluster_->AddNode(kJoiner);
    if (!added.ok()) {
      ADD_FAILURE() << added;
      return 0;
    }
    uint32_t victim = 0;
    std::string move;
    std::map<uint32_t, size_t> hits_handled;
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (victim == 0 && Clock::now() < until) {
      for (uint32_t id = 1; id <= kInitialNodes && victim == 0; ++id) {
        const size_t hits = FenceHits(id);
        if (hits == hits_handled[id]) continue;
        auto state = cluster_->State();
        if (!state.ok()) continue;  // looked at again next round
        hits_handled[id] = hits;
        for (const auto& bucket : state->map->buckets()) {
          if (!bucket.transition.has_value() || bucket.transition->source.front() != NodeId(id)) {
            continue;
          }
          move = bucket.DebugString();
          if (bucket.transition->mode == cluster::TransitionMode::kCopyThenSwitch) victim = id;
        }
      }
      if (victim == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (victim == 0) {
      ADD_FAILURE() << "no source of a copy-then-switch move reached source.after_fence in 30 s";
      return 0;
    }
    cluster_->Kill(victim);
    for (uint32_t id = 1; id <= kInitialNodes; ++id) {
      if (id == victim) continue;
      Status disarmed = cluster_->SetNodeFailpoints(id, "");
      EXPECT_TRUE(disarmed.ok()) << "failpoints of node " << id << ": " << disarmed;
    }
    std::fprintf(stderr, "node %u SIGKILLed after the fence of %s\n", victim, move.c_str());
    return victim;
  }

  // How often node `id` has reached source.after_fence (its log, over all its starts).
  size_t FenceHits(uint32_t id) const {
    const std::string log = ReadFile(fmt::format("{}/node-{}.log", cluster_->dir(), id));
    const std::string hit = "failpoint source.after_fence: hit";
    size_t hits = 0;
    for (size_t at = log.find(hit); at != std::string::npos; at = log.find(hit, at + 1)) ++hits;
    return hits;
  }

  // A copy-then-switch move to node 4 in flight: its bucket, and the node it moves from.
  struct MoveToTheJoiner {
    std::string bucket;
    uint32_t source = 0;
  };
  // Waits up to 30 s for a copy-then-switch move to node 4 in the coordinator's map (node 4's
  // bootstrap, switch-then-copy, comes first), with `committed` one past its commit; nullopt
  // (with a failure) if none comes.
  std::optional<MoveToTheJoiner> AwaitACopyThenSwitchMoveToTheJoiner(bool committed) {
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until) {
      auto state = cluster_->State();
      if (state.ok()) {
        for (const auto& bucket : state->map->buckets()) {
          if (bucket.transition.has_value() &&
              bucket.transition->mode == cluster::TransitionMode::kCopyThenSwitch &&
              bucket.transition->destination.front() == NodeId(kJoiner) &&
              (!committed || cluster::IsCommitted(bucket.transition->stage))) {
            return MoveToTheJoiner{.bucket = bucket.DebugString(),
                                   .source = bucket.transition->source.front().value()};
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "no " << (committed ? "committed " : "") << "copy-then-switch move to node "
                  << kJoiner << " in 30 s";
    return std::nullopt;
  }

  // A paged walk's steps once `victim` was killed (PagedWalk's before_read): the walk reads on
  // while it is down until a read fails, or until it has read `max_pages_while_down` pages;
  // then `victim` is restarted, and the walk is paced (MovePacer) and paused 100 ms after each
  // failed read.
  struct AfterAKill {
    uint32_t victim = 0;
    int max_pages_while_down = 0;
    int pages_while_down = 0;
    bool restarted = false;
  };
  void StepAfterAKill(AfterAKill& kill, const PagedWalk& so_far, MovePacer& pacer) {
    if (!kill.restarted) {
      if (!so_far.last_read_failed && ++kill.pages_while_down < kill.max_pages_while_down) return;
      Status status = cluster_->Restart(kill.victim);
      EXPECT_TRUE(status.ok()) << status;
      kill.restarted = true;
      return;
    }
    if (so_far.last_read_failed) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return;
    }
    pacer.HoldAt(so_far.documents.back().key, so_far.documents.size());
  }

  // The end of a test with a workload: balanced, nothing acknowledged lost, every node holding
  // exactly its buckets, no process ended but those the test killed.
  void VerifyEverything() {
    ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
    workload_->Stop();
    ExpectNoLoss(*workload_, db_.get());
    ExpectOneMap(*cluster_);
    for (const Exit& exit : cluster_->Reap()) {
      ADD_FAILURE() << "process " << exit.id << " ended (status " << exit.status << ")";
    }
  }

  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Database> db_;
  std::optional<Collection> collection_;
  CollectionId collection_id_;
  Untouched untouched_;
  std::unique_ptr<Workload> workload_;
  std::vector<std::string> reference_;  // StartPausedCluster's walk of the quiet cluster
};

// A paged query (20 a page, about 120 pages) over 2,400 untouched documents on 3 nodes; after
// its first page node 4 joins and 3 buckets move to it (a switch-then-copy bootstrap, then
// copy-then-switch moves), each held 1 s with both copies serving (kMovePauses). The walk
// waits inside a moving bucket until its move commits, and for moves still to come. It returns
// every document exactly once with its body, in the quiet cluster's order; at least one move
// commits while the query is open, and at least one with the walk inside the moving bucket
// (the next page is read at the new owner from the cursor).
TEST_F(ScanDuringMoveTest, PagedQueryReturnsEveryKeyOnceWhileMovesCommit) {
  ASSERT_NO_FATAL_FAILURE(StartPausedCluster(/*workload=*/false));
  MovePacer pacer(*cluster_, collection_id_, kPageSize);
  const uint64_t committed_before = MovesCommitted();
  auto join_then_pace = JoinThenPace(pacer);
  const PagedWalk walk = WalkPages([&](const PagedWalk& so_far) {
    join_then_pace(so_far.documents.back().key, so_far.documents.size());
  });
  const uint64_t committed_during = MovesCommitted() - committed_before;
  EXPECT_TRUE(walk.failures.empty()) << walk.failures.front();
  ExpectSameOrder(CheckWalk(walk.documents, untouched_, false, "paged walk"), reference_, true,
                  "paged walk");
  ExpectMovesDuringTheWalk(pacer, committed_during, fmt::format("{} pages", walk.pages));
}

// The same with a streamed query (20 documents a message, one stream per bucket): the walk is
// held in the callback, its stream to the moving bucket open and paused, until the move
// commits; the streams of the buckets after it open at their owners of the new map. Every
// document exactly once with its body, in the quiet cluster's order; at least one move commits
// while the query is open, and at least one with the walk inside the moving bucket. (The source
// may already have sent the rest of the paused bucket into the transport's buffers: the test
// does not force the stream to be cut by WRONG_SHARD and reopened at the new owner.)
TEST_F(ScanDuringMoveTest, StreamedQueryReturnsEveryKeyOnceWhileMovesCommit) {
  ASSERT_NO_FATAL_FAILURE(StartPausedCluster(/*workload=*/false));
  MovePacer pacer(*cluster_, collection_id_, kPageSize);
  const uint64_t committed_before = MovesCommitted();
  auto join_then_pace = JoinThenPace(pacer);
  const auto [documents, status] = WalkStream([&](const std::vector<Document>& so_far) {
    join_then_pace(so_far.back().key, so_far.size());
  });
  const uint64_t committed_during = MovesCommitted() - committed_before;
  EXPECT_TRUE(status.ok()) << status;
  ExpectSameOrder(CheckWalk(documents, untouched_, false, "streamed walk"), reference_, true,
                  "streamed walk");
  ExpectMovesDuringTheWalk(pacer, committed_during,
                           fmt::format("{} documents streamed", documents.size()));
}

// A paged query across a SIGKILL: writers run on keys of their own in the same collection;
// after the first page node 4 joins and the first source of a copy-then-switch move to node 4
// is SIGKILLed after its fence (KillASourceAfterTheFenceOfACopyThenSwitchMove). The walk reads
// on while the node is down until a page read fails, which must be a retryable error
// (UNAVAILABLE or DEADLINE_EXCEEDED); the node is restarted and the walk RESUMES from the
// cursor of the failed read, paced so that the remaining moves commit while it is open. This is
// the behaviour checked because the paged API offers it: a failed read leaves the caller's
// cursor valid, and a failed page returns nothing. The union of the pages returns every
// untouched document exactly once with its body, in the quiet cluster's order, and no key
// twice; at least one move commits while the query is open. Then nothing acknowledged is lost
// and every node holds exactly its buckets.
TEST_F(ScanDuringMoveTest, PagedQueryResumesAcrossASourceKilledMidMove) {
  ASSERT_NO_FATAL_FAILURE(StartPausedCluster(/*workload=*/true));
  MovePacer pacer(*cluster_, collection_id_, kPageSize);
  const uint64_t committed_before = MovesCommitted();
  bool killed = false;
  // Reads on until a read meets the dead node.
  AfterAKill kill{.max_pages_while_down = std::numeric_limits<int>::max()};
  const uint32_t& victim = kill.victim;
  const PagedWalk walk = WalkPages([&](const PagedWalk& so_far) {
    if (!killed) {
      killed = true;
      kill.victim = KillASourceAfterTheFenceOfACopyThenSwitchMove();
      return;
    }
    if (victim != 0) StepAfterAKill(kill, so_far, pacer);
  });
  const bool restarted = kill.restarted;
  const int pages_while_down = kill.pages_while_down;
  const uint64_t committed_during = MovesCommitted() - committed_before;
  std::fprintf(stderr,
               "%d pages, %d read while node %u was down, %zu failed reads; %llu moves "
               "committed during the query:\n%s",
               walk.pages, pages_while_down, victim, walk.failures.size(),
               static_cast<unsigned long long>(committed_during), pacer.log().c_str());
  ASSERT_NE(victim, 0u);
  EXPECT_TRUE(restarted) << "no page read failed while node " << victim << " was down";
  for (const Status& failure : walk.failures) {
    EXPECT_TRUE(IsRetryable(failure)) << failure;
  }
  ExpectSameOrder(CheckWalk(walk.documents, untouched_, true, "paged walk"), reference_, true,
                  "paged walk");
  EXPECT_GE(committed_during, 1u) << "moves committed while the query was open";
  VerifyEverything();
}

// A streamed query across a SIGKILL, with writers on keys of their own: after the first
// message node 4 joins and the first source of a copy-then-switch move to node 4 is SIGKILLed
// after its fence; the stream goes on while the node is down and must end with a retryable
// error once its retries at the dead node run out. Its documents so far must be a prefix of the
// quiet cluster's walk (nothing skipped, nothing twice, the loaded bodies). The stream cannot
// be resumed: the API gives the caller no cursor of a streamed document, so this test checks
// the other behaviour: after the node is restarted the query runs again from the start, paced
// so that the remaining moves commit while it is open, and that second run must be exact (every
// untouched document once, in order). At least one move commits while one of the two runs is
// open. Then nothing acknowledged is lost and every node holds exactly its buckets.
TEST_F(ScanDuringMoveTest, StreamedQueryRunsExactlyAgainAfterASourceKilledMidMove) {
  ASSERT_NO_FATAL_FAILURE(StartPausedCluster(/*workload=*/true));
  const uint64_t committed_before = MovesCommitted();
  bool killed = false;
  uint32_t victim = 0;
  const auto [cut, cut_status] = WalkStream([&](const std::vector<Document>&) {
    if (!killed) {
      killed = true;
      victim = KillASourceAfterTheFenceOfACopyThenSwitchMove();
    }
  });
  const uint64_t committed_first = MovesCommitted() - committed_before;
  ASSERT_NE(victim, 0u);
  EXPECT_TRUE(IsRetryable(cut_status))
      << "the stream with node " << victim << " down: " << cut_status;
  ExpectSameOrder(CheckWalk(cut, untouched_, true, "cut stream"), reference_, false, "cut stream");

  Status restarted = cluster_->Restart(victim);
  ASSERT_TRUE(restarted.ok()) << restarted;
  // The second run starts once clients can find the node at its new port.
  Status reachable = cluster_->AwaitReachable(victim, std::chrono::seconds(30));
  ASSERT_TRUE(reachable.ok()) << reachable;
  MovePacer pacer(*cluster_, collection_id_, kPageSize);
  const uint64_t committed_between = MovesCommitted();
  const auto [again, again_status] = WalkStream(
      [&](const std::vector<Document>& so_far) { pacer.HoldAt(so_far.back().key, so_far.size()); });
  const uint64_t committed_second = MovesCommitted() - committed_between;
  std::fprintf(stderr,
               "cut stream: %zu documents (%s); moves committed: %llu during it, %llu during "
               "the second run:\n%s",
               cut.size(), cut_status.ToString().c_str(),
               static_cast<unsigned long long>(committed_first),
               static_cast<unsigned long long>(committed_second), pacer.log().c_str());
  EXPECT_TRUE(again_status.ok()) << again_status;
  ExpectSameOrder(CheckWalk(again, untouched_, true, "second stream"), reference_, true,
                  "second stream");
  EXPECT_GE(committed_first + committed_second, 1u) << "moves committed while a query was open";
  VerifyEverything();
}

// Which process QueryAcrossAKillTest kills in the middle of a move, and when.
enum class MidMoveVictim {
  kCoordinator,        // after the ingest
  kDestination,        // after the ingest
  kSourceAfterCommit,  // after the commit, before the source drops its copy
};

// Pages a walk reads with the victim down (unless a read fails first).
constexpr int kPagesWhileDown = 10;

class QueryAcrossAKillTest : public ScanDuringMoveTest,
                             public testing::WithParamInterface<MidMoveVictim> {};

// A paged query across a SIGKILL in the middle of a copy-then-switch move to node 4: of the
// coordinator or of node 4 while the move is held 1 s after its ingest (kMovePauses: the
// destination holds a full copy, the source serves), or of the move's source while it is held
// 1 s after its commit (`coordinator.after_commit`: the destination serves, the source has not
// dropped its copy). Writers run on keys of their own; after the first page node 4 joins; once
// such a move is there the victim is SIGKILLed, and restarted on its data directory once a page
// read fails or the walk has read kPagesWhileDown pages without it (a restarted coordinator
// recovers the move from its log; a restarted destination has lost the move's catch-up record;
// a restarted source finds the committed map and drops its copy). A failed read (which must be
// retryable) is read again from its cursor; after the restart the walk is paced so that the
// remaining moves commit while it is open. Every untouched document exactly once with its body,
// in the quiet cluster's order; at least one move commits while the query is open; then nothing
// acknowledged is lost and every node holds exactly its buckets.
TEST_P(QueryAcrossAKillTest, PagedQueryReturnsEveryKeyOnceAcrossAKillMidMove) {
  const MidMoveVictim victim = GetParam();
  const bool coordinator = victim == MidMoveVictim::kCoordinator;
  const bool after_commit = victim == MidMoveVictim::kSourceAfterCommit;
  std::string pauses(kMovePauses);
  if (after_commit) pauses += ",coordinator.after_commit=pause:1000";
  ASSERT_NO_FATAL_FAILURE(StartPausedCluster(/*workload=*/true, pauses));
  MovePacer pacer(*cluster_, collection_id_, kPageSize);
  const uint64_t committed_before = MovesCommitted();
  uint64_t committed_before_the_kill = 0;
  bool joined = false;
  std::string move;  // the move at the kill
  AfterAKill kill{.max_pages_while_down = kPagesWhileDown};
  const PagedWalk walk = WalkPages([&](const PagedWalk& so_far) {
    if (!joined) {
      joined = true;
      Status added = cluster_->AddNode(kJoiner);
      EXPECT_TRUE(added.ok()) << added;
      return;
    }
    if (move.empty()) {
      auto found = AwaitACopyThenSwitchMoveToTheJoiner(after_commit);
      move = found.has_value() ? found->bucket : "none";
      if (!found.has_value()) return;
      kill.victim = coordinator ? kCoordinator : after_commit ? found->source : kJoiner;
      committed_before_the_kill = MovesCommitted();
      cluster_->Kill(kill.victim);
      std::fprintf(stderr, "%s SIGKILLed in the middle of %s\n",
                   coordinator ? "the coordinator" : fmt::format("node {}", kill.victim).c_str(),
                   move.c_str());
      return;
    }
    if (kill.victim != 0 || coordinator) StepAfterAKill(kill, so_far, pacer);
  });
  // The coordinator counts the moves of its own incarnation.
  const uint64_t committed_during =
      coordinator ? committed_before_the_kill - committed_before + MovesCommitted()
                  : MovesCommitted() - committed_before;
  std::fprintf(stderr,
               "%d pages, %d read while it was down, %zu failed reads; %llu moves committed "
               "during the query:\n%s",
               walk.pages, kill.pages_while_down, walk.failures.size(),
               static_cast<unsigned long long>(committed_during), pacer.log().c_str());
  ASSERT_NE(move, "none");
  for (const Status& failure : walk.failures) {
    EXPECT_TRUE(IsRetryable(failure)) << failure;
  }
  ExpectSameOrder(CheckWalk(walk.documents, untouched_, true, "paged walk"), reference_, true,
                  "paged walk");
  EXPECT_GE(committed_during, 1u) << "moves committed while the query was open";
  VerifyEverything();
}

INSTANTIATE_TEST_SUITE_P(Victims, QueryAcrossAKillTest,
                         testing::Values(MidMoveVictim::kCoordinator, MidMoveVictim::kDestination,
                                         MidMoveVictim::kSourceAfterCommit),
                         [](const testing::TestParamInfo<MidMoveVictim>& info) {
                           switch (info.param) {
                             case MidMoveVictim::kCoordinator:
                               return "Coordinator";
                             case MidMoveVictim::kDestination:
                               return "Destination";
                             case MidMoveVictim::kSourceAfterCommit:
                               return "SourceAfterCommit";
                           }
                           return "Unknown";
                         });

}  // namespace
}  // namespace shoal::cluster_test
