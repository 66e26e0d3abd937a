// MergeQuery (paper 000 Algorithm 6): the concurrent page reads give the sequential merge's
// result row for row and read the same pages, over randomized shard contents and first-page
// sizes; the first page has its own size; a shard error ends the query with nothing left
// running; the first pages are requested at once and the next page is read ahead at half a
// page; destruction waits for a read in flight.

#include "src/clientside/merge_query.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

constexpr auto kDeadline = std::chrono::seconds(60);

// A count that threads can wait on, with a deadline.
class Counter {
 public:
  void Add() {
    std::lock_guard lock(mu_);
    ++n_;
    cv_.notify_all();
  }
  // False when `n` was not reached within kDeadline.
  [[nodiscard]] bool AwaitAtLeast(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return n_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

// A memory shard whose Query calls are recorded and can be delayed or failed by a hook (set
// before the query starts). RemoteCalls() as told: true makes the merge read it on pool threads.
class ObservedShard final : public testing::ForwardingMemoryShard {
 public:
  ObservedShard(std::string name, bool remote)
      : ForwardingMemoryShard(std::move(name)), remote_(remote) {}

  // Runs before each Query call with its 0-based index; a non-OK result fails the call.
  void SetHook(std::function<Status(size_t)> hook) { hook_ = std::move(hook); }
  // The cursor of each Query call, in order (nullopt: from the start).
  [[nodiscard]] std::vector<std::optional<std::string>> cursors() const {
    std::lock_guard lock(mu_);
    return cursors_;
  }
  // The limit of each Query call, in order.
  [[nodiscard]] std::vector<size_t> limits() const {
    std::lock_guard lock(mu_);
    return limits_;
  }
  [[nodiscard]] int in_flight() const {
    std::lock_guard lock(mu_);
    return in_flight_;
  }
  [[nodiscard]] int max_in_flight() const {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }

  bool RemoteCalls() const override { return remote_; }
  StatusOr<ShardPage> Query(const ShardQuery& q) override {
    size_t index = 0;
    {
      std::lock_guard lock(mu_);
      index = cursors_.size();
      cursors_.push_back(q.has_after_key ? std::optional<std::string>(q.after_key) : std::nullopt);
      limits_.push_back(q.limit);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    }
    const Status hooked = hook_ ? hook_(index) : OkStatus();
    StatusOr<ShardPage> page = hooked.ok() ? inner().Query(q) : StatusOr<ShardPage>(hooked);
    std::lock_guard lock(mu_);
    --in_flight_;
    return page;
  }

 private:
  const bool remote_;
  std::function<Status(size_t)> hook_;
  mutable std::mutex mu_;
  std::vector<std::optional<std::string>> cursors_;  // guarded by mu_
  std::vector<size_t> limits_;                       // guarded by mu_
  int in_flight_ = 0;                                // guarded by mu_
  int max_in_flight_ = 0;                            // guarded by mu_
};

std::vector<std::unique_ptr<ObservedShard>> MakeShards(size_t n, bool remote) {
  std::vector<std::unique_ptr<ObservedShard>> shards;
  for (size_t i = 0; i < n; ++i) {
    shards.push_back(std::make_unique<ObservedShard>(std::to_string(i), remote));
  }
  return shards;
}

std::vector<ShardBackend*> Pointers(const std::vector<std::unique_ptr<ObservedShard>>& shards) {
  std::vector<ShardBackend*> out;
  for (const auto& s : shards) out.push_back(s.get());
  return out;
}

ShardDocument Live(std::string pk, int g, uint64_t version) {
  return ShardDocument{.primary_key = std::move(pk),
                       .body = "{\"g\":" + std::to_string(g) + "}",
                       .version = MapVersion(version),
                       .tombstone = false};
}

MergeQueryOptions Plain(size_t page_size) {
  return MergeQueryOptions{
      .filter = {}, .consistent = false, .new_version = MapVersion(1), .page_size = page_size};
}

// Algorithm 6 without pages: every shard's whole answer, then per key the highest version (a
// tombstone wins a tie; otherwise the first shard's copy), tombstones and shadow rows dropped.
std::vector<ShardDocument> Oracle(const std::vector<std::unique_ptr<ObservedShard>>& shards,
                                  const MergeQueryOptions& options) {
  std::map<std::string, ShardDocument> winners;
  for (const auto& shard : shards) {
    ShardQuery q;
    q.filter = options.filter;
    q.include_tombstones = options.consistent;
    if (options.consistent && !options.filter.empty()) q.or_version = options.new_version;
    q.limit = 1000000;
    StatusOr<ShardPage> page = shard->Query(q);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) return {};
    for (const ShardDocument& d : page->documents) {
      auto [it, inserted] = winners.emplace(d.primary_key, d);
      if (!inserted &&
          (d.version > it->second.version || (d.version == it->second.version && d.tombstone))) {
        it->second = d;
      }
    }
  }
  std::vector<ShardDocument> out;
  for (auto& [key, d] : winners) {
    if (!d.tombstone) out.push_back(std::move(d));
  }
  return out;
}

// Reads the whole query with the given batch sizes (cycled); the documents of each Next().
std::vector<std::vector<ShardDocument>> ReadAll(MergeQuery& q, const std::vector<size_t>& maxes) {
  std::vector<std::vector<ShardDocument>> batches;
  for (size_t i = 0;; ++i) {
    StatusOr<std::vector<ShardDocument>> batch = q.Next(maxes[i % maxes.size()]);
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok() || batch->empty()) break;
    EXPECT_LE(batch->size(), maxes[i % maxes.size()]);
    batches.push_back(*std::move(batch));
  }
  return batches;
}

// Randomized contents (old and new versions, tombstones, copies of a key on several shards,
// shadow rows when a filter meets rebalancing), page sizes and batch sizes: the concurrent
// merge returns exactly the sequential merge's batches, reads each shard with the same cursors,
// never has two pages of one shard in flight, and agrees with the merge done without pages.
TEST(MergeQueryTest, ConcurrentReadsGiveTheSequentialMerge) {
  for (uint32_t seed = 0; seed < 500; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const size_t n = static_cast<size_t>(pick(1, 4));
    auto sequential = MakeShards(n, /*remote=*/false);
    auto concurrent = MakeShards(n, /*remote=*/true);
    const int keys = pick(0, 60);
    for (int k = 0; k < keys; ++k) {
      for (size_t s = 0; s < n; ++s) {
        if (pick(0, 9) >= 4) continue;
        const int g = pick(0, 2);
        const auto version = static_cast<uint64_t>(pick(1, 2));
        ShardDocument d = Live(fmt::format("k{:03}", k), g, version);
        if (pick(0, 3) == 0) {
          d.tombstone = true;
          d.body.clear();
        }
        ASSERT_TRUE(sequential[s]->Upsert(d).ok());
        ASSERT_TRUE(concurrent[s]->Upsert(d).ok());
      }
    }
    for (auto& shard : concurrent) {
      shard->SetHook([](size_t) {
        std::this_thread::yield();  // vary when pages complete
        return OkStatus();
      });
    }
    MergeQueryOptions options = Plain(static_cast<size_t>(pick(1, 6)));
    options.consistent = pick(0, 1) == 1;
    options.new_version = MapVersion(2);
    if (pick(0, 1) == 1) {
      options.filter.all_of.push_back(
          {.path = "g", .op = storage::CompareOp::kEq, .value = int64_t{1}});
    }
    std::vector<size_t> maxes;
    for (int i = 0; i < 5; ++i) maxes.push_back(static_cast<size_t>(pick(1, 7)));
    // A first page smaller, equal to or larger than the later ones (0: the page size).
    options.first_page_size = static_cast<size_t>(pick(0, 9));

    MergeQuery seq_query(Pointers(sequential), options);
    MergeQuery con_query(Pointers(concurrent), options);
    const auto seq_batches = ReadAll(seq_query, maxes);
    const auto con_batches = ReadAll(con_query, maxes);
    EXPECT_EQ(con_batches, seq_batches);
    EXPECT_TRUE(seq_query.done());
    EXPECT_TRUE(con_query.done());
    EXPECT_EQ(con_query.pages_in_flight(), 0u);
    // An exhausted query stays exhausted and reads nothing more.
    StatusOr<std::vector<ShardDocument>> after = con_query.Next(3);
    ASSERT_TRUE(after.ok());
    EXPECT_TRUE(after->empty());

    for (size_t s = 0; s < n; ++s) {
      EXPECT_EQ(concurrent[s]->cursors(), sequential[s]->cursors()) << "shard " << s;
      EXPECT_EQ(concurrent[s]->limits(), sequential[s]->limits()) << "shard " << s;
      EXPECT_LE(concurrent[s]->max_in_flight(), 1) << "shard " << s;
    }
    std::vector<ShardDocument> flat;
    for (const auto& b : seq_batches) flat.insert(flat.end(), b.begin(), b.end());
    EXPECT_EQ(flat, Oracle(sequential, options));
  }
}

// Every first page is requested before any of them returns: each blocks until all three were
// requested (a sequential merge would never get past shard 0 and fail at the deadline).
TEST(MergeQueryTest, FirstPagesAreRequestedAtOnce) {
  auto shards = MakeShards(3, /*remote=*/true);
  Counter first_pages;
  for (size_t s = 0; s < shards.size(); ++s) {
    ASSERT_TRUE(shards[s]->Insert(Live(fmt::format("k{}", s), 0, 1)).ok());
    shards[s]->SetHook([&first_pages](size_t index) {
      if (index != 0) return OkStatus();
      first_pages.Add();
      if (!first_pages.AwaitAtLeast(3)) {
        return DeadlineExceededError("the other first pages were not requested meanwhile");
      }
      return OkStatus();
    });
  }
  MergeQuery q(Pointers(shards), Plain(4));
  StatusOr<std::vector<ShardDocument>> docs = q.Next(10);
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0].primary_key, "k0");
  EXPECT_EQ((*docs)[2].primary_key, "k2");
}

// The next page is requested when the buffered rows fall to half a page (page of 4: at 2 rows
// left, not at 3), and is read while the caller holds the cursor without calling Next.
TEST(MergeQueryTest, NextPageIsReadAheadAtHalfAPage) {
  auto shards = MakeShards(2, /*remote=*/true);
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(shards[0]->Insert(Live(fmt::format("a{}", i), 0, 1)).ok());
  ASSERT_TRUE(shards[1]->Insert(Live("z", 0, 1)).ok());
  Counter shard0_calls;
  shards[0]->SetHook([&shard0_calls](size_t) {
    shard0_calls.Add();
    return OkStatus();
  });
  MergeQuery q(Pointers(shards), Plain(4));
  StatusOr<std::vector<ShardDocument>> first = q.Next(1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(q.pages_in_flight(), 0u);  // 3 rows of shard 0 buffered: more than half a page
  StatusOr<std::vector<ShardDocument>> second = q.Next(1);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(q.pages_in_flight(), 1u);  // 2 rows left: the next page is on its way
  EXPECT_TRUE(shard0_calls.AwaitAtLeast(2));
  EXPECT_EQ(shards[0]->cursors(), (std::vector<std::optional<std::string>>{std::nullopt, "a3"}));
  StatusOr<std::vector<ShardDocument>> rest = q.Next(100);
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_EQ(rest->size(), 7u);  // a2 .. a7, z
  EXPECT_EQ(rest->back().primary_key, "z");
  EXPECT_EQ(shards[0]->cursors().size(), 2u);  // no page more than the sequential merge's
  EXPECT_EQ(shards[1]->cursors().size(), 1u);
}

// MergeQueryOptions::first_page_size: each shard's first request asks for that many rows and
// every later one for page_size, so 10 rows of one shard take a first page of 8 and a second of
// 3 (2 rows); with no first page size, pages of 3 throughout (4 pages).
TEST(MergeQueryTest, FirstPageHasItsOwnSize) {
  for (const bool remote : {false, true}) {
    SCOPED_TRACE(remote ? "concurrent" : "sequential");
    for (const size_t first : {size_t{8}, size_t{0}}) {
      auto shards = MakeShards(2, remote);
      for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(shards[0]->Insert(Live(fmt::format("a{}", i), 0, 1)).ok());
      ASSERT_TRUE(shards[1]->Insert(Live("z", 0, 1)).ok());
      MergeQueryOptions options = Plain(3);
      options.first_page_size = first;
      MergeQuery q(Pointers(shards), options);
      StatusOr<std::vector<ShardDocument>> all = q.Next(100);
      ASSERT_TRUE(all.ok()) << all.status();
      EXPECT_EQ(all->size(), 11u);
      if (first == 8) {
        EXPECT_EQ(shards[0]->limits(), (std::vector<size_t>{8, 3}));
        EXPECT_EQ(shards[0]->cursors(),
                  (std::vector<std::optional<std::string>>{std::nullopt, "a7"}));
        EXPECT_EQ(shards[1]->limits(), (std::vector<size_t>{8}));
      } else {
        EXPECT_EQ(shards[0]->limits(), (std::vector<size_t>{3, 3, 3, 3}));
        EXPECT_EQ(shards[1]->limits(), (std::vector<size_t>{3}));
      }
    }
  }
}

// Destroying the query waits for a page read in flight: the read is held until just before the
// destruction and has finished when the destructor returns.
TEST(MergeQueryTest, DestructorWaitsForAReadInFlight) {
  auto shards = MakeShards(1, /*remote=*/true);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(shards[0]->Insert(Live(fmt::format("a{}", i), 0, 1)).ok());
  Counter started;
  Counter destroying;
  std::atomic<bool> finished{false};
  shards[0]->SetHook([&](size_t index) {
    if (index == 0) return OkStatus();
    started.Add();
    const bool released = destroying.AwaitAtLeast(1);
    finished.store(true);
    return released ? OkStatus() : DeadlineExceededError("never destroyed");
  });
  auto q = std::make_unique<MergeQuery>(Pointers(shards), Plain(2));
  StatusOr<std::vector<ShardDocument>> first = q->Next(1);  // 1 row left of 2: read ahead
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(started.AwaitAtLeast(1));
  destroying.Add();
  q.reset();
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(shards[0]->in_flight(), 0);
}

// A shard that fails mid-query: the query returns its error (code kept, shard named), then
// keeps returning it without calling any shard again; no read is left running. Over pool
// threads and on the caller's thread alike.
TEST(MergeQueryTest, ShardErrorMidQueryEndsTheQuery) {
  for (bool remote : {true, false}) {
    SCOPED_TRACE(remote ? "concurrent" : "sequential");
    auto shards = MakeShards(3, remote);
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(
          shards[static_cast<size_t>(i % 3)]->Insert(Live(fmt::format("k{:02}", i), 0, 1)).ok());
    }
    shards[1]->SetHook(
        [](size_t index) { return index == 2 ? UnavailableError("shard down") : OkStatus(); });
    MergeQuery q(Pointers(shards), Plain(2));
    size_t returned = 0;
    Status error;
    for (int i = 0; i < 100 && error.ok(); ++i) {
      StatusOr<std::vector<ShardDocument>> batch = q.Next(1);
      if (!batch.ok()) {
        error = batch.status();
      } else {
        ASSERT_FALSE(batch->empty()) << "the query ended without the shard's error";
        returned += batch->size();
      }
    }
    ASSERT_EQ(error.code(), StatusCode::kUnavailable) << error;
    EXPECT_NE(error.ToString().find("memory:1"), std::string::npos) << error;
    EXPECT_NE(error.ToString().find("shard down"), std::string::npos) << error;
    EXPECT_LT(returned, 30u);
    EXPECT_TRUE(q.failed());
    EXPECT_EQ(q.pages_in_flight(), 0u);
    size_t calls = 0;
    for (const auto& s : shards) {
      EXPECT_EQ(s->in_flight(), 0);
      calls += s->cursors().size();
    }
    StatusOr<std::vector<ShardDocument>> again = q.Next(1);
    EXPECT_EQ(again.status(), error);
    size_t calls_after = 0;
    for (const auto& s : shards) calls_after += s->cursors().size();
    EXPECT_EQ(calls_after, calls);
  }
}

// Two shards fail; the one reported is the first in the merge's order (shard 0), although
// shard 0 fails only once shard 1's failing call is under way.
TEST(MergeQueryTest, ReportedErrorIsTheFirstInMergeOrder) {
  auto shards = MakeShards(2, /*remote=*/true);
  Counter shard1_failed;
  shards[0]->SetHook([&](size_t) {
    if (!shard1_failed.AwaitAtLeast(1)) return DeadlineExceededError("shard 1 never ran");
    return InternalError("zero");
  });
  shards[1]->SetHook([&](size_t) {
    shard1_failed.Add();
    return InternalError("one");
  });
  MergeQuery q(Pointers(shards), Plain(4));
  StatusOr<std::vector<ShardDocument>> docs = q.Next(1);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().ToString().find("zero"), std::string::npos) << docs.status();
}

}  // namespace
}  // namespace shoal::clientside
