#include "src/metadata/embedded_metadata_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/metadata/metadata_store_conformance.h"

namespace shoal::metadata {
namespace {

using std::chrono::milliseconds;

#define ASSERT_OK(expr)                                     \
  do {                                                      \
    const ::shoal::Status shoal_s_ = ::shoal::Status(expr); \
    ASSERT_TRUE(shoal_s_.ok()) << shoal_s_;                 \
  } while (false)

StatusCode CodeOf(const Status& status) { return status.code(); }

bool Contains(const Status& status, std::string_view text) {
  return MessageOf(status).find(text) != std::string_view::npos;
}

// A fresh directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "shoal-meta-XXXXXX").string();
    const char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The shared contract, each case on a fresh store in its own directory.
INSTANTIATE_TEST_SUITE_P(Embedded, MetadataStoreConformance,
                         ::testing::Values(ConformanceStore{
                             .name = "Embedded",
                             .open = []() -> std::unique_ptr<MetadataStore> {
                               // The directory outlives the store: kept for the process, removed at
                               // exit.
                               static std::vector<std::unique_ptr<TempDir>> dirs;
                               dirs.push_back(std::make_unique<TempDir>());
                               auto opened =
                                   EmbeddedMetadataStore::Open({.path = dirs.back()->path() + "/db",
                                                                .sync = false,
                                                                .now_micros = nullptr});
                               EXPECT_TRUE(opened.ok()) << opened.status();
                               return opened.ok() ? *std::move(opened) : nullptr;
                             }}),
                         [](const auto&) { return std::string("Embedded"); });

class EmbeddedMetadataStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  EmbeddedMetadataOptions Options() {
    return {.path = dir_.path() + "/db", .sync = true, .now_micros = [clock = clock_] {
              return clock->load();
            }};
  }

  // Closes the store (if open) and opens it again on the same directory.
  void Reopen() {
    store_.reset();
    auto opened = EmbeddedMetadataStore::Open(Options());
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
  }

  void AdvanceMs(int64_t ms) { clock_->fetch_add(ms * 1000); }

  // Records every event under `prefix`.
  WatchId Record(std::string prefix, std::vector<WatchEvent>* events) {
    return store_->Watch(std::move(prefix),
                         [events](const WatchEvent& event) { events->push_back(event); });
  }

  static WatchEvent Put(std::string key, std::string value, uint64_t version) {
    return {.key = std::move(key),
            .value = Versioned{.value = std::move(value), .version = version}};
  }
  static WatchEvent Gone(std::string key) { return {.key = std::move(key), .value = std::nullopt}; }

  TempDir dir_;
  std::shared_ptr<std::atomic<int64_t>> clock_ = std::make_shared<std::atomic<int64_t>>(1'000'000);
  std::unique_ptr<EmbeddedMetadataStore> store_;
};

TEST_F(EmbeddedMetadataStoreTest, CreateOnly) {
  auto created = store_->Put("k", "v1", kMustNotExist);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, 1u);
  auto again = store_->Put("k", "v2", kMustNotExist);
  EXPECT_EQ(CodeOf(again.status()), StatusCode::kFailedPrecondition);
  auto got = store_->Get("k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (Versioned{.value = "v1", .version = 1}));
}

TEST_F(EmbeddedMetadataStoreTest, VersionMismatchNamesKeyAndBothVersions) {
  ASSERT_OK(store_->Put("key", "a", kMustNotExist).status());
  auto second = store_->Put("key", "b", 1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, 2u);
  auto stale = store_->Put("key", "c", 1);
  ASSERT_EQ(CodeOf(stale.status()), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(stale.status(), "\"key\"")) << stale.status();
  EXPECT_TRUE(Contains(stale.status(), "expected version 1, found version 2")) << stale.status();
  auto absent = store_->Put("other", "x", 5);
  ASSERT_EQ(CodeOf(absent.status()), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(absent.status(), "found absent")) << absent.status();
  EXPECT_EQ(store_->Get("key")->value, "b");
  EXPECT_EQ(CodeOf(store_->Get("other").status()), StatusCode::kNotFound);
}

TEST_F(EmbeddedMetadataStoreTest, UnconditionalPutCreatesAndOverwrites) {
  EXPECT_EQ(*store_->Put("k", "a", kAnyVersion), 1u);
  EXPECT_EQ(*store_->Put("k", "b", kAnyVersion), 2u);
  EXPECT_EQ(*store_->Put("k", "", kAnyVersion), 3u);
  EXPECT_EQ(*store_->Get("k"), (Versioned{.value = "", .version = 3}));
}

TEST_F(EmbeddedMetadataStoreTest, Delete) {
  EXPECT_EQ(CodeOf(store_->Delete("k", 1)), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->Delete("k", kMustNotExist)), StatusCode::kNotFound);
  ASSERT_OK(store_->Delete("k", kAnyVersion));
  ASSERT_OK(store_->Put("k", "a", kMustNotExist).status());
  ASSERT_OK(store_->Put("k", "b", 1).status());
  EXPECT_EQ(CodeOf(store_->Delete("k", 1)), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf(store_->Delete("k", kMustNotExist)), StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->Delete("k", 2));
  EXPECT_EQ(CodeOf(store_->Get("k").status()), StatusCode::kNotFound);
  // Re-created keys start again at version 1.
  EXPECT_EQ(*store_->Put("k", "c", kMustNotExist), 1u);
  ASSERT_OK(store_->Delete("k", kAnyVersion));
  EXPECT_EQ(CodeOf(store_->Get("k").status()), StatusCode::kNotFound);
}

TEST_F(EmbeddedMetadataStoreTest, CommitIsAllOrNothing) {
  ASSERT_OK(store_->Put("x", "old", kMustNotExist).status());
  const std::vector<MetaOp> failing = {
      MetaOp::Put("a", "1", kMustNotExist),
      MetaOp::Delete("x", 1),
      MetaOp::Check("c", 1),  // c is absent
      MetaOp::Put("b", "2"),
  };
  Status status = store_->Commit(failing);
  ASSERT_EQ(CodeOf(status), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(status, "operation 2")) << status;
  EXPECT_EQ(CodeOf(store_->Get("a").status()), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->Get("b").status()), StatusCode::kNotFound);
  EXPECT_EQ(*store_->Get("x"), (Versioned{.value = "old", .version = 1}));

  // A delete of an absent key fails the commit the same way.
  const std::vector<MetaOp> absent = {MetaOp::Put("a", "1"), MetaOp::Delete("nope", 3)};
  status = store_->Commit(absent);
  ASSERT_EQ(CodeOf(status), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(status, "operation 1")) << status;
  EXPECT_EQ(CodeOf(store_->Get("a").status()), StatusCode::kNotFound);

  // Each operation sees the ones before it.
  const std::vector<MetaOp> good = {
      MetaOp::Put("a", "1", kMustNotExist),
      MetaOp::Put("a", "2", 1),
      MetaOp::Check("a", 2),
      MetaOp::Delete("x", 1),
      MetaOp::Put("x", "new", kMustNotExist),
      MetaOp::Put("b", "3"),
      MetaOp::Delete("never", kAnyVersion),
  };
  ASSERT_OK(store_->Commit(good));
  EXPECT_EQ(*store_->Get("a"), (Versioned{.value = "2", .version = 2}));
  EXPECT_EQ(*store_->Get("x"), (Versioned{.value = "new", .version = 1}));
  EXPECT_EQ(*store_->Get("b"), (Versioned{.value = "3", .version = 1}));
  ASSERT_OK(store_->Commit({}));
}

TEST_F(EmbeddedMetadataStoreTest, ListByPrefixIsSorted) {
  for (const char* key : {"a/2", "b/1", "a0", "a/1", "a/\xff", "a"}) {
    ASSERT_OK(store_->Put(key, std::string("v") + key, kMustNotExist).status());
  }
  auto session = store_->OpenSession(milliseconds(1000));
  ASSERT_TRUE(session.ok());
  ASSERT_OK(store_->PutEphemeral(*session, "a/3", "e", kMustNotExist).status());

  auto listed = store_->List("a/");
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> keys;
  for (const auto& [key, value] : *listed) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a/1", "a/2", "a/3", "a/\xff"}));
  EXPECT_EQ((*listed)[0].second, (Versioned{.value = "va/1", .version = 1}));
  EXPECT_EQ((*listed)[2].second, (Versioned{.value = "e", .version = 1}));
  EXPECT_EQ(store_->List("")->size(), 7u);
  EXPECT_TRUE(store_->List("zzz")->empty());
  EXPECT_EQ(store_->List("a")->size(), 6u);
}

TEST_F(EmbeddedMetadataStoreTest, ValuesAndVersionsSurviveReopenButEphemeralsDoNot) {
  ASSERT_OK(store_->Put("p", "1", kMustNotExist).status());
  ASSERT_OK(store_->Put("p", "2", 1).status());
  ASSERT_OK(store_->Put("p", "3", 2).status());
  ASSERT_OK(store_->Commit(std::vector<MetaOp>{MetaOp::Put("q", "x"), MetaOp::Put("r", "y")}));
  ASSERT_OK(store_->Put("gone", "z", kMustNotExist).status());
  ASSERT_OK(store_->Delete("gone", 1));
  auto session = store_->OpenSession(milliseconds(60'000));
  ASSERT_TRUE(session.ok());
  ASSERT_OK(store_->PutEphemeral(*session, "eph", "e", kMustNotExist).status());

  Reopen();
  EXPECT_EQ(*store_->Get("p"), (Versioned{.value = "3", .version = 3}));
  EXPECT_EQ(*store_->Get("q"), (Versioned{.value = "x", .version = 1}));
  EXPECT_EQ(*store_->Get("r"), (Versioned{.value = "y", .version = 1}));
  EXPECT_EQ(CodeOf(store_->Get("gone").status()), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->Get("eph").status()), StatusCode::kNotFound);
  EXPECT_EQ(store_->List("")->size(), 3u);
  EXPECT_EQ(*store_->Put("p", "4", 3), 4u);
}

TEST_F(EmbeddedMetadataStoreTest, WatchSeesPutsDeletesCommitsAndExpiry) {
  std::vector<WatchEvent> events;
  const WatchId id = Record("w/", &events);
  ASSERT_OK(store_->Put("w/a", "1", kMustNotExist).status());
  ASSERT_OK(store_->Put("other", "1", kMustNotExist).status());
  ASSERT_OK(store_->Delete("w/a", 1));
  ASSERT_OK(store_->Commit(std::vector<MetaOp>{MetaOp::Put("w/b", "2"), MetaOp::Put("x", "3"),
                                               MetaOp::Put("w/c", "4")}));
  // A failed commit and a failed put produce nothing.
  EXPECT_FALSE(
      store_->Commit(std::vector<MetaOp>{MetaOp::Put("w/d", "5"), MetaOp::Check("x", 9)}).ok());
  EXPECT_FALSE(store_->Put("w/b", "6", 7).ok());
  auto session = store_->OpenSession(milliseconds(10));
  ASSERT_TRUE(session.ok());
  ASSERT_OK(store_->PutEphemeral(*session, "w/e", "7", kMustNotExist).status());
  AdvanceMs(10);
  store_->ExpireSessions();

  EXPECT_EQ(events, (std::vector<WatchEvent>{Put("w/a", "1", 1), Gone("w/a"), Put("w/b", "2", 1),
                                             Put("w/c", "4", 1), Put("w/e", "7", 1), Gone("w/e")}));
  store_->Unwatch(id);
  ASSERT_OK(store_->Put("w/a", "again", kAnyVersion).status());
  EXPECT_EQ(events.size(), 6u);
  store_->Unwatch(id);  // unknown ids are ignored
}

TEST_F(EmbeddedMetadataStoreTest, CallbacksMayCallBackIntoTheStore) {
  std::vector<WatchEvent> events;
  Record("", &events);
  // Mirrors every write of "src/" to "dst/" from inside the callback.
  [[maybe_unused]] const WatchId mirror = store_->Watch("src/", [this](const WatchEvent& event) {
    auto read = store_->Get(event.key);
    ASSERT_TRUE(read.ok());
    ASSERT_OK(store_->Put("dst/" + event.key.substr(4), read->value, kAnyVersion).status());
  });
  ASSERT_OK(store_->Put("src/k", "v", kMustNotExist).status());
  EXPECT_EQ(*store_->Get("dst/k"), (Versioned{.value = "v", .version = 1}));
  // The nested change is delivered after the change that caused it.
  EXPECT_EQ(events, (std::vector<WatchEvent>{Put("src/k", "v", 1), Put("dst/k", "v", 1)}));
}

TEST_F(EmbeddedMetadataStoreTest, CallbackMayUnwatchItself) {
  int calls = 0;
  WatchId id;
  id = store_->Watch("", [&](const WatchEvent&) {
    ++calls;
    store_->Unwatch(id);
  });
  ASSERT_OK(store_->Put("a", "1", kAnyVersion).status());
  ASSERT_OK(store_->Put("a", "2", kAnyVersion).status());
  EXPECT_EQ(calls, 1);
}

TEST_F(EmbeddedMetadataStoreTest, SessionsExpireWithoutKeepAlive) {
  std::vector<WatchEvent> events;
  Record("eph/", &events);
  auto session = store_->OpenSession(milliseconds(100));
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(*store_->PutEphemeral(*session, "eph/a", "1", kMustNotExist), 1u);
  EXPECT_EQ(*store_->PutEphemeral(*session, "eph/a", "2", 1), 2u);
  EXPECT_EQ(CodeOf(store_->PutEphemeral(*session, "eph/a", "3", 1).status()),
            StatusCode::kFailedPrecondition);

  AdvanceMs(99);
  ASSERT_OK(store_->KeepAlive(*session));  // the deadline moves to 199 ms
  AdvanceMs(99);
  EXPECT_EQ(*store_->Get("eph/a"), (Versioned{.value = "2", .version = 2}));
  AdvanceMs(1);
  // Expired lazily by this call.
  EXPECT_EQ(CodeOf(store_->Get("eph/a").status()), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->KeepAlive(*session)), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->CloseSession(*session)), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->PutEphemeral(*session, "eph/b", "1", kAnyVersion).status()),
            StatusCode::kNotFound);
  EXPECT_EQ(events,
            (std::vector<WatchEvent>{Put("eph/a", "1", 1), Put("eph/a", "2", 2), Gone("eph/a")}));
  EXPECT_EQ(CodeOf(store_->OpenSession(milliseconds(0)).status()), StatusCode::kInvalidArgument);
}

TEST_F(EmbeddedMetadataStoreTest, CloseSessionDeletesItsKeysOnly) {
  auto first = store_->OpenSession(milliseconds(1000));
  auto second = store_->OpenSession(milliseconds(1000));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(*first, *second);
  ASSERT_OK(store_->PutEphemeral(*first, "m/1", "a", kMustNotExist).status());
  ASSERT_OK(store_->PutEphemeral(*first, "m/2", "b", kMustNotExist).status());
  ASSERT_OK(store_->PutEphemeral(*second, "m/3", "c", kMustNotExist).status());
  ASSERT_OK(store_->CloseSession(*first));
  EXPECT_EQ(CodeOf(store_->CloseSession(*first)), StatusCode::kNotFound);
  auto listed = store_->List("m/");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].first, "m/3");
}

TEST_F(EmbeddedMetadataStoreTest, EphemeralAndPersistentKeysDoNotMix) {
  auto session = store_->OpenSession(milliseconds(1000));
  auto other = store_->OpenSession(milliseconds(1000));
  ASSERT_TRUE(session.ok() && other.ok());
  ASSERT_OK(store_->Put("p", "1", kMustNotExist).status());
  EXPECT_EQ(CodeOf(store_->PutEphemeral(*session, "p", "2", kAnyVersion).status()),
            StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->PutEphemeral(*session, "e", "1", kMustNotExist).status());
  EXPECT_EQ(CodeOf(store_->PutEphemeral(*other, "e", "2", kAnyVersion).status()),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf(store_->Put("e", "2", kAnyVersion).status()), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf(store_->Commit(std::vector<MetaOp>{MetaOp::Put("e", "2")})),
            StatusCode::kFailedPrecondition);
  // Anyone may delete an ephemeral key; afterwards it can be created as persistent.
  ASSERT_OK(store_->Commit(std::vector<MetaOp>{MetaOp::Check("e", 1), MetaOp::Delete("e", 1),
                                               MetaOp::Put("e", "durable", kMustNotExist)}));
  ASSERT_OK(store_->CloseSession(*session));
  EXPECT_EQ(*store_->Get("e"), (Versioned{.value = "durable", .version = 1}));
  Reopen();
  EXPECT_EQ(*store_->Get("e"), (Versioned{.value = "durable", .version = 1}));
}

TEST_F(EmbeddedMetadataStoreTest, KeyLimit) {
  const std::string longest(kMaxKeyBytes, 'k');
  ASSERT_OK(store_->Put(longest, "v", kMustNotExist).status());
  EXPECT_EQ(store_->Get(longest)->value, "v");
  const std::string too_long(kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(CodeOf(store_->Put(too_long, "v", kAnyVersion).status()), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(store_->Get(too_long).status()), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(store_->Put("", "v", kAnyVersion).status()), StatusCode::kInvalidArgument);
  const Status commit =
      store_->Commit(std::vector<MetaOp>{MetaOp::Put("ok", "v"), MetaOp::Check(too_long, 1)});
  EXPECT_EQ(CodeOf(commit), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(commit, "operation 1")) << commit;
  auto session = store_->OpenSession(milliseconds(1000));
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(CodeOf(store_->PutEphemeral(*session, too_long, "v", kAnyVersion).status()),
            StatusCode::kInvalidArgument);
}

TEST_F(EmbeddedMetadataStoreTest, ValueLimit) {
  const std::string largest(kMaxValueBytes, 'v');
  ASSERT_OK(store_->Put("k", largest, kMustNotExist).status());
  EXPECT_EQ(store_->Get("k")->value.size(), kMaxValueBytes);
  const std::string too_large(kMaxValueBytes + 1, 'v');
  EXPECT_EQ(CodeOf(store_->Put("k", too_large, kAnyVersion).status()),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeOf(store_->Commit(std::vector<MetaOp>{MetaOp::Put("k2", too_large)})),
            StatusCode::kResourceExhausted);
  auto session = store_->OpenSession(milliseconds(1000));
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(CodeOf(store_->PutEphemeral(*session, "e", too_large, kAnyVersion).status()),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(store_->Get("k")->version, 1u);
}

TEST_F(EmbeddedMetadataStoreTest, CommitOpLimit) {
  std::vector<MetaOp> ops;
  for (size_t i = 0; i < kMaxCommitOps; ++i) ops.push_back(MetaOp::Put(fmt::format("k{}", i), "v"));
  ASSERT_OK(store_->Commit(ops));
  EXPECT_EQ(store_->List("k")->size(), kMaxCommitOps);
  ops.push_back(MetaOp::Put("one-more", "v"));
  EXPECT_EQ(CodeOf(store_->Commit(ops)), StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeOf(store_->Get("one-more").status()), StatusCode::kNotFound);
}

// Four threads increment one counter by compare-and-set; no increment is lost, and a watcher
// sees every version once, in order.
TEST_F(EmbeddedMetadataStoreTest, ConcurrentCasIncrementsAreExact) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 100;
  std::vector<uint64_t> seen;
  [[maybe_unused]] const WatchId watch = store_->Watch("counter", [&seen](const WatchEvent& event) {
    // Deliveries never overlap, so no lock is needed here.
    seen.push_back(event.value->version);
  });
  ASSERT_OK(store_->Put("counter", "0", kMustNotExist).status());
  std::atomic<int> conflicts = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        auto current = store_->Get("counter");
        ASSERT_TRUE(current.ok()) << current.status();
        const int next = std::stoi(current->value) + 1;
        auto written = store_->Put("counter", std::to_string(next), current->version);
        if (written.ok()) {
          ++done;
        } else {
          ASSERT_EQ(CodeOf(written.status()), StatusCode::kFailedPrecondition);
          ++conflicts;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  auto final_value = store_->Get("counter");
  ASSERT_TRUE(final_value.ok());
  EXPECT_EQ(final_value->value, std::to_string(kThreads * kIncrements));
  EXPECT_EQ(final_value->version, uint64_t{kThreads * kIncrements + 1});
  ASSERT_EQ(seen.size(), size_t{kThreads * kIncrements + 1});
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
  RecordProperty("conflicts", conflicts.load());
}

}  // namespace
}  // namespace shoal::metadata
