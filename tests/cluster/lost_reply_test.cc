// A write whose answer is lost to a node crash, and a restart inside one call's retries
// (docs/design/failure-patterns.md, field note B; the client's retry contract in
// src/client/client.h). The only node of a cluster dies right after applying a client's write
// and before answering it (`node.after_write=crash:N`), and the test restarts it at once, so
// the node is back within the retries of the client's next calls (about 1 s).
//
// Checked, for an insert, a delete and a compare-and-set sent as a call of its own, and for an
// insert and a delete sent by the asynchronous operations (a batch call, or a message of the
// node's pipe):
//   - the write whose answer was lost returns OK or kUnknown ("outcome unknown"), never the
//     answer that a resent request gets from the write it made itself (DUPLICATE for an insert,
//     NOT_FOUND for a delete, a version mismatch for a compare-and-set);
//   - every other write of the sequence succeeds, the ones sent while the node was down
//     included: a request that certainly was not delivered is resent until the node is back;
//   - afterwards every key reads back the state the sequence wrote, the lost answer's too.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

enum class LostWrite : uint8_t { kInsert, kDelete, kCompareAndSet };
// How the client sends each write: the synchronous call, or the asynchronous operation (one in
// flight) as a batch call or over the pipe (include/shoal/shoal.h, ConnectOptions::pipe).
enum class Path : uint8_t { kCall, kAsync, kAsyncPipe };

struct LostReplyCase {
  LostWrite op;
  Path path;
};

constexpr int kKeys = 20;
constexpr int kLostAt = 10;  // the sequence's write whose answer the crash loses (0-based)

std::string Key(int i) { return fmt::format("lost-reply-{}", i); }
std::string Body(int i, int round) { return fmt::format(R"({{"i":{},"round":{}}})", i, round); }

// One write of `op` to `key` by `path`, waited for.
StatusOr<uint64_t> Write(Collection& docs, LostWrite op, Path path, const std::string& key,
                         const std::string& body, uint64_t expected_version) {
  if (path == Path::kCall) {
    switch (op) {
      case LostWrite::kInsert:
        return docs.Insert(key, body);
      case LostWrite::kDelete:
        return docs.Delete(key);
      case LostWrite::kCompareAndSet:
        return docs.CompareAndSet(key, expected_version, body);
    }
  }
  std::promise<StatusOr<uint64_t>> result;
  auto done = [&result](StatusOr<uint64_t> r) { result.set_value(std::move(r)); };
  switch (op) {
    case LostWrite::kInsert:
      docs.InsertAsync(key, body, done);
      break;
    case LostWrite::kDelete:
      docs.DeleteAsync(key, done);
      break;
    case LostWrite::kCompareAndSet:
      return UnimplementedError("no asynchronous compare-and-set");
  }
  return result.get_future().get();
}

class LostReplyTest : public testing::TestWithParam<LostReplyCase> {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(20).c_str());
    cluster_.reset();
  }

  std::unique_ptr<ProcessCluster> cluster_;
};

TEST_P(LostReplyTest, TheWriteReturnsItsOwnOutcomeAndTheNextCallsRideOutTheRestart) {
  const LostWrite op = GetParam().op;
  const Path path = GetParam().path;
  // Deletes and compare-and-sets need the keys first: kKeys upserts before the sequence.
  const int preload = op == LostWrite::kInsert ? 0 : kKeys;
  ASSERT_TRUE(cluster_->StartCoordinator(/*initial_nodes=*/1, /*buckets=*/4).ok());
  Status started =
      cluster_->StartNode(1, fmt::format("node.after_write=crash:{}", preload + kLostAt + 1));
  ASSERT_TRUE(started.ok()) << started;
  Status serving = cluster_->WaitServing(30);
  ASSERT_TRUE(serving.ok()) << serving;

  // The client runs on its own thread; this one restarts the node the moment it dies (the
  // children's death signal is tied to the thread that started them).
  std::vector<StatusOr<uint64_t>> results;
  std::vector<uint64_t> versions(kKeys, 0);
  Status setup = OkStatus();
  std::atomic<bool> done{false};
  std::thread client([&] {
    auto finish = [&](Status s) {
      setup = std::move(s);
      done = true;
    };
    auto db = Database::Connect(cluster_->uri(), {.pipe = path == Path::kAsyncPipe});
    if (!db.ok()) return finish(db.status());
    auto docs = (*db)->GetCollection("docs");
    if (!docs.ok()) return finish(docs.status());
    for (int i = 0; i < preload; ++i) {
      auto written = docs->Upsert(Key(i), Body(i, 0));
      if (!written.ok()) return finish(written.status());
      versions[i] = *written;
    }
    for (int i = 0; i < kKeys; ++i) {
      results.push_back(Write(*docs, op, path, Key(i), Body(i, 1), versions[i]));
    }
    done = true;
  });
  int restarts = 0;
  while (!done.load()) {
    for (const Exit& exit : cluster_->Reap()) {
      EXPECT_TRUE(exit.killed) << "node " << exit.id << " exited with " << exit.status;
      Status restarted = cluster_->Restart(exit.id);
      EXPECT_TRUE(restarted.ok()) << restarted;
      ++restarts;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  client.join();
  ASSERT_TRUE(setup.ok()) << setup;
  ASSERT_EQ(restarts, 1) << "the node did not die at its write, or died again";
  ASSERT_TRUE(cluster_->LogShowsFailpoint(1, "node.after_write"));

  ASSERT_EQ(results.size(), static_cast<size_t>(kKeys));
  for (int i = 0; i < kKeys; ++i) {
    const Status& s = results[i].status();
    if (i == kLostAt) {
      EXPECT_TRUE(s.ok() || s.code() == StatusCode::kUnknown)
          << Key(i) << ": the write whose answer was lost returned " << s;
    } else {
      EXPECT_TRUE(s.ok()) << Key(i) << ": " << s;
    }
  }
  // The lost answer's write was applied before the crash; every key holds the sequence's state.
  auto db = Database::Connect(cluster_->uri());
  ASSERT_TRUE(db.ok()) << db.status();
  auto docs = (*db)->GetCollection("docs");
  ASSERT_TRUE(docs.ok()) << docs.status();
  for (int i = 0; i < kKeys; ++i) {
    auto got = docs->Get(Key(i));
    if (op == LostWrite::kDelete) {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << Key(i) << ": " << got.status();
    } else {
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->json, Body(i, 1)) << Key(i);
    }
  }
}

std::string CaseName(const testing::TestParamInfo<LostReplyCase>& info) {
  std::string name;
  switch (info.param.op) {
    case LostWrite::kInsert:
      name = "Insert";
      break;
    case LostWrite::kDelete:
      name = "Delete";
      break;
    case LostWrite::kCompareAndSet:
      name = "CompareAndSet";
      break;
  }
  switch (info.param.path) {
    case Path::kCall:
      return name;
    case Path::kAsync:
      return name + "Async";
    case Path::kAsyncPipe:
      return name + "AsyncPipe";
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Ops, LostReplyTest,
                         testing::Values(LostReplyCase{LostWrite::kInsert, Path::kCall},
                                         LostReplyCase{LostWrite::kDelete, Path::kCall},
                                         LostReplyCase{LostWrite::kCompareAndSet, Path::kCall},
                                         LostReplyCase{LostWrite::kInsert, Path::kAsync},
                                         LostReplyCase{LostWrite::kDelete, Path::kAsync},
                                         LostReplyCase{LostWrite::kInsert, Path::kAsyncPipe},
                                         LostReplyCase{LostWrite::kDelete, Path::kAsyncPipe}),
                         CaseName);

}  // namespace
}  // namespace shoal::cluster_test
