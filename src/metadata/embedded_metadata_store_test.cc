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

// The contract both stores share runs above (metadata_store_conformance.h); below, what only the
// embedded store does: its files, its clock-driven session expiry and its callback threading.
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

// Four threads increment one counter by compare-and-set; no increment is lost, and a watcher
// sees every version once, in order.
}  // namespace
}  // namespace shoal::metadata
