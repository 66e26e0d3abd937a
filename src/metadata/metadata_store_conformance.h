#pragma once

// The behaviour every MetadataStore implementation shares, as a value-parameterized GoogleTest
// suite. A test file includes this header and instantiates the suite with a factory:
//   INSTANTIATE_TEST_SUITE_P(Mine, MetadataStoreConformance,
//                            ::testing::Values(ConformanceStore{"Mine", [] { return ...; }}));
// Each test gets a fresh, empty store from the factory. Watch delivery is checked only as the
// interface's weakest reading (every change is eventually reported, the last event of a key is
// its final state), which both the synchronous and the asynchronous stores meet.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/metadata/fenced_metadata_store.h"
#include "src/metadata/leader_election.h"
#include "src/metadata/metadata_store.h"

namespace shoal::metadata {

struct ConformanceStore {
  std::string name;
  std::function<std::unique_ptr<MetadataStore>()> open;
};

inline void PrintTo(const ConformanceStore& store, std::ostream* os) { *os << store.name; }

#define SHOAL_CONFORMANCE_ASSERT_OK(expr)                   \
  do {                                                      \
    const ::shoal::Status shoal_s_ = ::shoal::Status(expr); \
    ASSERT_TRUE(shoal_s_.ok()) << shoal_s_;                 \
  } while (false)

class MetadataStoreConformance : public ::testing::TestWithParam<ConformanceStore> {
 protected:
  void SetUp() override {
    store_ = GetParam().open();
    ASSERT_NE(store_, nullptr);
  }

  static bool Contains(const Status& status, std::string_view text) {
    return MessageOf(status).find(text) != std::string_view::npos;
  }

  // Waits up to 20 s for `done` (watch delivery may be asynchronous).
  static bool Eventually(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  std::unique_ptr<MetadataStore> store_;
};

TEST_P(MetadataStoreConformance, CreateOnly) {
  auto created = store_->Put("k", "v1", kMustNotExist);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, 1u);
  EXPECT_EQ(store_->Put("k", "v2", kMustNotExist).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store_->Get("k"), (Versioned{.value = "v1", .version = 1}));
}

TEST_P(MetadataStoreConformance, VersionMismatchNamesKeyAndBothVersions) {
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("key", "a", kMustNotExist).status());
  EXPECT_EQ(*store_->Put("key", "b", 1), 2u);
  auto stale = store_->Put("key", "c", 1);
  ASSERT_EQ(stale.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(stale.status(), "\"key\"")) << stale.status();
  EXPECT_TRUE(Contains(stale.status(), "expected version 1, found version 2")) << stale.status();
  auto absent = store_->Put("other", "x", 5);
  ASSERT_EQ(absent.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(absent.status(), "found absent")) << absent.status();
  EXPECT_EQ(store_->Get("key")->value, "b");
  EXPECT_EQ(store_->Get("other").status().code(), StatusCode::kNotFound);
}

TEST_P(MetadataStoreConformance, UnconditionalPutCreatesAndOverwrites) {
  EXPECT_EQ(*store_->Put("k", "a", kAnyVersion), 1u);
  EXPECT_EQ(*store_->Put("k", "b", kAnyVersion), 2u);
  EXPECT_EQ(*store_->Put("k", "", kAnyVersion), 3u);
  EXPECT_EQ(*store_->Get("k"), (Versioned{.value = "", .version = 3}));
}

TEST_P(MetadataStoreConformance, Delete) {
  EXPECT_EQ(store_->Delete("k", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete("k", kMustNotExist).code(), StatusCode::kNotFound);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Delete("k", kAnyVersion));
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("k", "a", kMustNotExist).status());
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("k", "b", 1).status());
  EXPECT_EQ(store_->Delete("k", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Delete("k", kMustNotExist).code(), StatusCode::kFailedPrecondition);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Delete("k", 2));
  EXPECT_EQ(store_->Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*store_->Put("k", "c", kMustNotExist), 1u);  // re-created keys start again at 1
}

TEST_P(MetadataStoreConformance, CommitIsAllOrNothing) {
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("x", "old", kMustNotExist).status());
  const std::vector<MetaOp> failing = {MetaOp::Put("a", "1", kMustNotExist), MetaOp::Delete("x", 1),
                                       MetaOp::Check("c", 1), MetaOp::Put("b", "2")};
  Status status = store_->Commit(failing);
  ASSERT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(status, "operation 2")) << status;
  EXPECT_EQ(store_->Get("a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Get("b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*store_->Get("x"), (Versioned{.value = "old", .version = 1}));

  const std::vector<MetaOp> absent = {MetaOp::Put("a", "1"), MetaOp::Delete("nope", 3)};
  status = store_->Commit(absent);
  ASSERT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(status, "operation 1")) << status;
  EXPECT_EQ(store_->Get("a").status().code(), StatusCode::kNotFound);

  // Each operation sees the ones before it.
  const std::vector<MetaOp> good = {
      MetaOp::Put("a", "1", kMustNotExist),
      MetaOp::Put("a", "2", 1),
      MetaOp::Check("a", 2),
      MetaOp::Delete("x", 1),
      MetaOp::Put("x", "new", kMustNotExist),
      MetaOp::Put("b", "3"),
      MetaOp::Delete("never", kAnyVersion),
      MetaOp::Check("never", kMustNotExist),
  };
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Commit(good));
  EXPECT_EQ(*store_->Get("a"), (Versioned{.value = "2", .version = 2}));
  EXPECT_EQ(*store_->Get("x"), (Versioned{.value = "new", .version = 1}));
  EXPECT_EQ(*store_->Get("b"), (Versioned{.value = "3", .version = 1}));
  EXPECT_EQ(store_->Get("never").status().code(), StatusCode::kNotFound);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Commit({}));
}

TEST_P(MetadataStoreConformance, ListByPrefixIsSortedBytewise) {
  for (const char* key : {"a/2", "b/1", "a0", "a/1", "a/\xff", "a", "a/\x01"}) {
    SHOAL_CONFORMANCE_ASSERT_OK(store_->Put(key, std::string("v") + key, kMustNotExist).status());
  }
  auto session = store_->OpenSession(std::chrono::milliseconds(10'000));
  ASSERT_TRUE(session.ok()) << session.status();
  SHOAL_CONFORMANCE_ASSERT_OK(store_->PutEphemeral(*session, "a/3", "e", kMustNotExist).status());
  auto listed = store_->List("a/");
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> keys;
  for (const auto& [key, value] : *listed) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a/\x01", "a/1", "a/2", "a/3", "a/\xff"}));
  EXPECT_EQ((*listed)[1].second, (Versioned{.value = "va/1", .version = 1}));
  EXPECT_EQ((*listed)[3].second, (Versioned{.value = "e", .version = 1}));
  EXPECT_EQ(store_->List("")->size(), 8u);
  EXPECT_TRUE(store_->List("zzz")->empty());
  EXPECT_EQ(store_->List("a")->size(), 7u);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->CloseSession(*session));
}

TEST_P(MetadataStoreConformance, WatchReportsChangesUntilUnwatched) {
  std::mutex mu;
  std::vector<WatchEvent> events;
  const WatchId id = store_->Watch("w/", [&](const WatchEvent& event) {
    std::lock_guard lock(mu);
    events.push_back(event);
  });
  auto last_of = [&](const std::string& key) -> std::optional<WatchEvent> {
    std::lock_guard lock(mu);
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->key == key) return *it;
    }
    return std::nullopt;
  };
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("w/a", "1", kMustNotExist).status());
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("other", "1", kMustNotExist).status());
  SHOAL_CONFORMANCE_ASSERT_OK(
      store_->Commit(std::vector<MetaOp>{MetaOp::Put("w/b", "2"), MetaOp::Put("x", "3")}));
  const WatchEvent b{.key = "w/b", .value = Versioned{.value = "2", .version = 1}};
  ASSERT_TRUE(Eventually([&] { return last_of("w/b") == b && last_of("w/a").has_value(); }));
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Delete("w/a", 1));
  const WatchEvent gone{.key = "w/a", .value = std::nullopt};
  ASSERT_TRUE(Eventually([&] { return last_of("w/a") == gone; }));
  {
    std::lock_guard lock(mu);
    for (const WatchEvent& event : events) EXPECT_TRUE(event.key.starts_with("w/")) << event.key;
  }
  store_->Unwatch(id);
  size_t count = 0;
  {
    std::lock_guard lock(mu);
    count = events.size();
  }
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("w/c", "late", kAnyVersion).status());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::lock_guard lock(mu);
  EXPECT_EQ(events.size(), count);
}

TEST_P(MetadataStoreConformance, CloseSessionDeletesItsKeysOnly) {
  auto first = store_->OpenSession(std::chrono::milliseconds(10'000));
  auto second = store_->OpenSession(std::chrono::milliseconds(10'000));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(*first, *second);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->PutEphemeral(*first, "m/1", "a", kMustNotExist).status());
  EXPECT_EQ(*store_->PutEphemeral(*first, "m/1", "b", 1), 2u);
  EXPECT_EQ(store_->PutEphemeral(*first, "m/1", "c", 1).status().code(),
            StatusCode::kFailedPrecondition);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->PutEphemeral(*first, "m/2", "b", kMustNotExist).status());
  SHOAL_CONFORMANCE_ASSERT_OK(store_->PutEphemeral(*second, "m/3", "c", kMustNotExist).status());
  SHOAL_CONFORMANCE_ASSERT_OK(store_->KeepAlive(*first));
  SHOAL_CONFORMANCE_ASSERT_OK(store_->CloseSession(*first));
  EXPECT_EQ(store_->CloseSession(*first).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->KeepAlive(*first).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->PutEphemeral(*first, "m/4", "x", kAnyVersion).status().code(),
            StatusCode::kNotFound);
  auto listed = store_->List("m/");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].first, "m/3");
  EXPECT_EQ(store_->OpenSession(std::chrono::milliseconds(0)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(MetadataStoreConformance, EphemeralAndPersistentKeysDoNotMix) {
  auto session = store_->OpenSession(std::chrono::milliseconds(10'000));
  auto other = store_->OpenSession(std::chrono::milliseconds(10'000));
  ASSERT_TRUE(session.ok() && other.ok());
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("p", "1", kMustNotExist).status());
  EXPECT_EQ(store_->PutEphemeral(*session, "p", "2", kAnyVersion).status().code(),
            StatusCode::kFailedPrecondition);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->PutEphemeral(*session, "e", "1", kMustNotExist).status());
  EXPECT_EQ(store_->PutEphemeral(*other, "e", "2", kAnyVersion).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Put("e", "2", kAnyVersion).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Commit(std::vector<MetaOp>{MetaOp::Put("e", "2")}).code(),
            StatusCode::kFailedPrecondition);
  // Anyone may delete an ephemeral key; afterwards it can be created as persistent.
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Commit(std::vector<MetaOp>{
      MetaOp::Check("e", 1), MetaOp::Delete("e", 1), MetaOp::Put("e", "durable", kMustNotExist)}));
  SHOAL_CONFORMANCE_ASSERT_OK(store_->CloseSession(*session));
  EXPECT_EQ(*store_->Get("e"), (Versioned{.value = "durable", .version = 1}));
}

TEST_P(MetadataStoreConformance, KeyLimit) {
  const std::string longest(kMaxKeyBytes, '\xfe');
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put(longest, "v", kMustNotExist).status());
  EXPECT_EQ(store_->Get(longest)->value, "v");
  const std::string too_long(kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(store_->Put(too_long, "v", kAnyVersion).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Get(too_long).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Put("", "v", kAnyVersion).status().code(), StatusCode::kInvalidArgument);
  const Status commit =
      store_->Commit(std::vector<MetaOp>{MetaOp::Put("ok", "v"), MetaOp::Check(too_long, 1)});
  EXPECT_EQ(commit.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(commit, "operation 1")) << commit;
  // Any byte string is a key.
  const std::string binary("\0/..\x80\n", 6);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put(binary, "b", kMustNotExist).status());
  EXPECT_EQ(store_->Get(binary)->value, "b");
}

TEST_P(MetadataStoreConformance, ValueLimit) {
  std::string largest(kMaxValueBytes, 'v');
  for (size_t i = 0; i < largest.size(); i += 4093) largest[i] = static_cast<char>(i);
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("k", largest, kMustNotExist).status());
  EXPECT_EQ(store_->Get("k")->value, largest);
  const std::string too_large(kMaxValueBytes + 1, 'v');
  EXPECT_EQ(store_->Put("k", too_large, kAnyVersion).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(store_->Commit(std::vector<MetaOp>{MetaOp::Put("k2", too_large)}).code(),
            StatusCode::kResourceExhausted);
  auto session = store_->OpenSession(std::chrono::milliseconds(10'000));
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(store_->PutEphemeral(*session, "e", too_large, kAnyVersion).status().code(),
            StatusCode::kResourceExhausted);
  // Several large values in one commit, then overwritten by small ones.
  const std::vector<MetaOp> big = {MetaOp::Put("b1", largest), MetaOp::Put("b2", largest),
                                   MetaOp::Put("k", "small", 1)};
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Commit(big));
  EXPECT_EQ(store_->Get("b2")->value, largest);
  EXPECT_EQ(*store_->Get("k"), (Versioned{.value = "small", .version = 2}));
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("b1", "tiny", 1).status());
  EXPECT_EQ(*store_->Get("b1"), (Versioned{.value = "tiny", .version = 2}));
}

TEST_P(MetadataStoreConformance, CommitOpLimit) {
  std::vector<MetaOp> ops;
  for (size_t i = 0; i < kMaxCommitOps; ++i) ops.push_back(MetaOp::Put(fmt::format("k{}", i), "v"));
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Commit(ops));
  EXPECT_EQ(store_->List("k")->size(), kMaxCommitOps);
  ops.push_back(MetaOp::Put("one-more", "v"));
  EXPECT_EQ(store_->Commit(ops).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(store_->Get("one-more").status().code(), StatusCode::kNotFound);
}

// Four threads increment one counter by compare-and-set; no increment is lost.
TEST_P(MetadataStoreConformance, ConcurrentCasIncrementsAreExact) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 40;
  SHOAL_CONFORMANCE_ASSERT_OK(store_->Put("counter", "0", kMustNotExist).status());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        auto current = store_->Get("counter");
        ASSERT_TRUE(current.ok()) << current.status();
        auto written =
            store_->Put("counter", std::to_string(std::stoi(current->value) + 1), current->version);
        if (written.ok()) {
          ++done;
        } else {
          ASSERT_EQ(written.status().code(), StatusCode::kFailedPrecondition) << written.status();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*store_->Get("counter"), (Versioned{.value = std::to_string(kThreads * kIncrements),
                                                .version = uint64_t{kThreads * kIncrements + 1}}));
}

// Two candidates: one leads; when its session ends the other takes over with a higher epoch, and
// the commits of the stale leader, fenced by its epoch, fail.
TEST_P(MetadataStoreConformance, LeaderElectionFencesAStaleLeader) {
  LeaderElection first(*store_, "election/", "first", std::chrono::milliseconds(10'000));
  LeaderElection second(*store_, "election/", "second", std::chrono::milliseconds(10'000));
  EXPECT_EQ(LeaderElection::Leader(*store_, "election/")->has_value(), false);
  ASSERT_EQ(first.TryAcquire().value_or(false), true);
  EXPECT_EQ(first.epoch(), std::optional<uint64_t>(1));
  ASSERT_EQ(second.TryAcquire().value_or(true), false);
  EXPECT_EQ(first.TryAcquire().value_or(false), true);  // already leader
  auto leader = LeaderElection::Leader(*store_, "election/");
  ASSERT_TRUE(leader.ok() && leader->has_value()) << leader.status();
  EXPECT_EQ(**leader, (std::pair<uint64_t, std::string>(1, "first")));
  SHOAL_CONFORMANCE_ASSERT_OK(
      store_->Commit(std::vector<MetaOp>{first.Fence(), MetaOp::Put("state", "by first")}));
  EXPECT_EQ(store_->Commit(std::vector<MetaOp>{second.Fence(), MetaOp::Put("state", "x")}).code(),
            StatusCode::kFailedPrecondition);

  // The first leader's session ends behind its back (as when it is cut off for longer than the
  // ttl); the standby takes over.
  SHOAL_CONFORMANCE_ASSERT_OK(store_->CloseSession(*first.session()));
  ASSERT_TRUE(Eventually([&] { return second.TryAcquire().value_or(false); }));
  EXPECT_EQ(second.epoch(), std::optional<uint64_t>(2));
  SHOAL_CONFORMANCE_ASSERT_OK(
      store_->Commit(std::vector<MetaOp>{second.Fence(), MetaOp::Put("state", "by second")}));
  // The stale leader still believes its epoch 1: fenced.
  const Status stale =
      store_->Commit(std::vector<MetaOp>{first.Fence(), MetaOp::Put("state", "by first again")});
  EXPECT_EQ(stale.code(), StatusCode::kFailedPrecondition) << stale;
  EXPECT_EQ(store_->Get("state")->value, "by second");
  EXPECT_EQ(first.KeepAlive().code(), StatusCode::kNotFound);
  second.Resign();
  EXPECT_EQ(LeaderElection::Leader(*store_, "election/")->has_value(), false);
}

// The view a leader writes through: every Put, Delete and Commit of the stale leader is refused
// once another candidate took over, and changes nothing; the new leader's writes go through.
TEST_P(MetadataStoreConformance, FencedStoreRefusesEveryWriteOfAStaleLeader) {
  LeaderElection first(*store_, "election/", "first", std::chrono::milliseconds(10'000));
  LeaderElection second(*store_, "election/", "second", std::chrono::milliseconds(10'000));
  FencedMetadataStore by_first(*store_, [&] { return first.Fence(); });
  FencedMetadataStore by_second(*store_, [&] { return second.Fence(); });
  ASSERT_EQ(first.TryAcquire().value_or(false), true);
  // kAnyVersion is pinned to the version read: the versions still count as usual.
  EXPECT_EQ(by_first.Put("map", "m1", kAnyVersion).value_or(0), 1u);
  EXPECT_EQ(by_first.Put("map", "m2", kAnyVersion).value_or(0), 2u);
  EXPECT_EQ(by_first.Put("map", "m3", 2).value_or(0), 3u);
  EXPECT_EQ(by_first.Put("map", "x", 2).status().code(), StatusCode::kFailedPrecondition);
  SHOAL_CONFORMANCE_ASSERT_OK(by_first.Put("log/1", "BEGIN", kMustNotExist).status());
  SHOAL_CONFORMANCE_ASSERT_OK(by_first.Commit(std::vector<MetaOp>{MetaOp::Put("log/2", "BEGIN")}));
  // A candidate that does not lead can not write at all.
  EXPECT_EQ(by_second.Put("map", "x", kAnyVersion).status().code(),
            StatusCode::kFailedPrecondition);

  // The first leader's session ends behind its back; the second takes over.
  SHOAL_CONFORMANCE_ASSERT_OK(store_->CloseSession(*first.session()));
  ASSERT_TRUE(Eventually([&] { return second.TryAcquire().value_or(false); }));
  EXPECT_EQ(by_second.Put("map", "m4 by second", 3).value_or(0), 4u);

  auto stale_put = by_first.Put("map", "stale", kAnyVersion);
  EXPECT_EQ(stale_put.status().code(), StatusCode::kFailedPrecondition) << stale_put.status();
  EXPECT_TRUE(Contains(stale_put.status(), "a newer leader took over")) << stale_put.status();
  EXPECT_EQ(by_first.Delete("log/1", kAnyVersion).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(by_first
                .Commit(std::vector<MetaOp>{MetaOp::Put("log/3", "BEGIN"),
                                            MetaOp::Put("map", "stale", 4)})
                .code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store_->Get("map"), (Versioned{.value = "m4 by second", .version = 4}));
  EXPECT_EQ(store_->Get("log/1")->value, "BEGIN");
  EXPECT_EQ(store_->Get("log/3").status().code(), StatusCode::kNotFound);
  SHOAL_CONFORMANCE_ASSERT_OK(by_second.Delete("log/1", 1));
  EXPECT_EQ(store_->Get("log/1").status().code(), StatusCode::kNotFound);

  // The limit: the fence takes one operation of kMaxCommitOps.
  std::vector<MetaOp> too_many;
  for (size_t i = 0; i < kMaxCommitOps; ++i) {
    too_many.push_back(MetaOp::Put(fmt::format("many/{}", i), "v"));
  }
  EXPECT_EQ(by_second.Commit(too_many).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(store_->List("many/")->empty());
  too_many.pop_back();
  SHOAL_CONFORMANCE_ASSERT_OK(by_second.Commit(too_many));
  EXPECT_EQ(store_->List("many/")->size(), kMaxCommitOps - 1);
}

}  // namespace shoal::metadata
