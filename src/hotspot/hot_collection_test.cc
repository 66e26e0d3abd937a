// Sharded fields and entity groups through the public API, on an embedded cluster.

#include "src/hotspot/hot_collection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/hotspot_json.h"
#include "include/shoal/shoal.h"

namespace shoal {
namespace {

std::string TempDir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp == nullptr ? "/tmp" : tmp) + "/shoal-hot-test-" +
                    std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

class HotCollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto db = Database::OpenEmbedded({.data_dir = dir_, .nodes = 3, .buckets = 16, .sync = false});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }
  void TearDown() override {
    if (db_ != nullptr) {
      EXPECT_TRUE(db_->Close().ok());
    }
    std::filesystem::remove_all(dir_);
  }
  Collection Open(const std::string& name) {
    auto c = db_->GetCollection(name);
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }
  static Json Body(const Document& doc) { return Json::parse(doc.json); }

  std::string dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(HotCollectionTest, StaticFieldFoldsOnGetAndRefusesDirectWrites) {
  Collection questions = Open("questions");
  ASSERT_TRUE(questions.Declare(R"({"votes": {"fold": "sum", "neutral": 0, "shards": 10}})").ok());
  ASSERT_TRUE(questions.Insert("42", R"({"question": "education?"})").ok());
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(questions.Apply("42", "votes", "1").ok());
  ASSERT_TRUE(questions.Apply("42", "votes", "-5").ok());
  auto doc = questions.Get("42");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(Body(*doc)["votes"], 20);
  EXPECT_EQ(Body(*doc)["question"], "education?");
  auto snapshot = questions.Get("42", ReadOptions{.mode = ReadMode::kSnapshot});
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(Body(*snapshot)["votes"], 20);

  // The shards of one hot document are spread over buckets and nodes.
  auto info = questions.Sharding("42", "votes");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->kind, "static");
  EXPECT_EQ(info->active_cells, 10u);
  EXPECT_EQ(info->distinct_buckets, 10u);
  EXPECT_EQ(info->distinct_nodes, 3u);

  EXPECT_EQ(questions.Update("42", R"({"votes": 1000})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(questions.Apply("42", "votes", "\"x\"").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(questions.Apply("42", "nope", "1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(questions.Apply("42", "votes", "{bad").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Body(*questions.Get("42"))["votes"], 20);  // nothing changed
  EXPECT_EQ(db_->GetCollection("_shoal.schema").status().code(), StatusCode::kInvalidArgument);
}

// 8 threads on 2 shards, with and without combining: every vote counted once. With combining,
// the threads beyond one per shard wait and share writes.
TEST_F(HotCollectionTest, ConcurrentVotesAreAllCounted) {
  for (const bool combine : {false, true}) {
    SCOPED_TRACE(combine ? "combine" : "one write per update");
    Collection questions = Open(combine ? "q_combined" : "q");
    ASSERT_TRUE(questions.Declare(R"({"votes": {"fold": "sum", "shards": 2}})").ok());
    ASSERT_TRUE(questions.Insert("hot", "{}").ok());
    constexpr int kThreads = 8;
    constexpr int kVotes = 100;
    std::atomic<int> failed = 0;
    std::atomic<int> shared = 0;  // votes whose write carried others too
    std::mutex first_error_mu;
    Status first_error;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kVotes; ++i) {
          auto applied = questions.Apply("hot", "votes", "1", {.combine = combine});
          if (!applied.ok()) {
            if (failed++ == 0) {
              std::lock_guard<std::mutex> lock(first_error_mu);
              first_error = applied.status();
            }
          } else if (applied->members > 1) {
            ++shared;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failed.load(), 0) << "first: " << first_error;
    EXPECT_EQ(Body(*questions.Get("hot"))["votes"], kThreads * kVotes);
    // Whether votes share a write depends on the scheduler (on 2 cores at most 2 threads run
    // at once); ApplyCombinerTest forces it. Without combining, none may.
    if (!combine) {
      EXPECT_EQ(shared.load(), 0);
    }
  }
}

// A schema read that began before a Declare (the maintainer's, another thread's) must not
// replace the declared schema when it ends: every write would then be refused as "not
// declared sharded" until the next refresh.
TEST_F(HotCollectionTest, DeclareWinsOverASchemaReadInFlight) {
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    Collection c = Open("declared" + std::to_string(round));
    std::atomic<bool> stop = false;
    std::thread reader([&] {
      while (!stop.load()) (void)c.Schema();
    });
    const Status declared = c.Declare(R"({"n": {"fold": "sum", "neutral": 0, "shards": 2}})");
    const StatusOr<ApplyResult> applied = c.Apply("k", "n", "1");
    const StatusOr<std::string> schema = c.Schema();
    stop = true;
    reader.join();
    ASSERT_TRUE(declared.ok()) << declared;
    EXPECT_TRUE(applied.ok()) << applied.status();
    ASSERT_TRUE(schema.ok()) << schema.status();
    EXPECT_NE(schema->find("\"n\""), std::string::npos) << *schema;
  }
}

TEST_F(HotCollectionTest, ReshardKeepsTheValue) {
  Collection c = Open("r");
  ASSERT_TRUE(c.Declare(R"({"n": {"fold": "sum", "shards": 2}})").ok());
  ASSERT_TRUE(c.Insert("k", "{}").ok());
  int expected = 0;
  for (uint32_t shards : {8u, 3u, 1u, 16u, 2u}) {
    for (int i = 0; i < 10; ++i, ++expected) ASSERT_TRUE(c.Apply("k", "n", "1").ok());
    ASSERT_TRUE(c.Reshard("k", "n", shards).ok());
    auto info = c.Sharding("k", "n");
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->active_cells, shards);
    EXPECT_EQ(info->retiring_cells, 0u);
    EXPECT_EQ(Body(*c.Get("k"))["n"], expected) << shards;
  }
  EXPECT_EQ(c.Reshard("k", "n", 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Reshard("k", "n", 65).code(), StatusCode::kInvalidArgument);
}

TEST_F(HotCollectionTest, DynamicFieldCompactsToTheSameValue) {
  Collection c = Open("d");
  ASSERT_TRUE(c.Declare(R"({"visits": {"fold": "count"}, "tags": {"fold": "set_union"}})").ok());
  ASSERT_TRUE(c.Insert("page", "{}").ok());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(c.Apply("page", "visits", "{}").ok());
  ASSERT_TRUE(c.Apply("page", "tags", R"(["b", "a"])").ok());
  ASSERT_TRUE(c.Apply("page", "tags", R"("c")").ok());
  EXPECT_EQ(Body(*c.Get("page"))["visits"], 30);
  ASSERT_TRUE(c.Compact("page").ok());
  auto info = c.Sharding("page", "visits");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kind, "dynamic");
  EXPECT_EQ(info->pending_cells, 0u);
  const Json body = Body(*c.Get("page"));
  EXPECT_EQ(body["visits"], 30);
  EXPECT_EQ(body["tags"], Json::array({"a", "b", "c"}));
}

TEST_F(HotCollectionTest, QueriesFilterOnFoldedValues) {
  Collection c = Open("filter");
  ASSERT_TRUE(c.Declare(R"({"votes": {"fold": "sum", "shards": 3}})").ok());
  for (int i = 0; i < 12; ++i) {
    const std::string key = "q" + std::to_string(i);
    ASSERT_TRUE(c.Insert(key, R"({"topic": ")" + std::string(i % 2 ? "odd" : "even") + "\"}").ok());
    for (int v = 0; v < i; ++v) ASSERT_TRUE(c.Apply(key, "votes", "1").ok());
  }
  std::set<std::string> found;
  QueryOptions options{
      .filter = {{"votes", Op::kGt, "5"}, {"topic", Op::kEq, "\"odd\""}}, .limit = 2, .cursor = {}};
  do {
    auto page = c.Query(options);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& doc : page->documents) {
      EXPECT_GT(Body(doc)["votes"].get<int>(), 5);
      EXPECT_TRUE(found.insert(doc.key).second);
    }
    options.cursor = page->next_cursor;
  } while (!options.cursor.empty());
  EXPECT_EQ(found, (std::set<std::string>{"q7", "q9", "q11"}));
}

TEST_F(HotCollectionTest, EntityGroupIsTheUnionOfItsSubGroups) {
  Collection c = Open("groups");
  ASSERT_TRUE(c.Declare(R"({"responses": {"group": 4}})").ok());
  ASSERT_TRUE(c.Insert("42", R"({"question": "why?"})").ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string member = "r" + std::to_string(t * 10 + i);
        EXPECT_TRUE(c.PutMember("42", "responses", member, R"({"by": ")" + member + "\"}").ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(c.RemoveMember("42", "responses", "r3").ok());
  EXPECT_EQ(c.RemoveMember("42", "responses", "r3").code(), StatusCode::kNotFound);
  EXPECT_EQ(c.PutMember("42", "responses", "", "{}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.PutMember("42", "responses", "x", "3").code(), StatusCode::kInvalidArgument);
  const Json body = Body(*c.Get("42"));
  EXPECT_EQ(body["responses"].size(), 39u);
  EXPECT_EQ(body["responses"]["r17"]["by"], "r17");
  auto info = c.Sharding("42", "responses");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kind, "entity_group");
  EXPECT_EQ(info->active_cells, 4u);
}

TEST_F(HotCollectionTest, DeleteResetsTheFields) {
  Collection c = Open("del");
  ASSERT_TRUE(c.Declare(R"({"n": {"fold": "sum", "shards": 2}, "g": {"group": 2}})").ok());
  ASSERT_TRUE(c.Insert("k", "{}").ok());
  ASSERT_TRUE(c.Apply("k", "n", "7").ok());
  ASSERT_TRUE(c.PutMember("k", "g", "m", "{}").ok());
  ASSERT_TRUE(c.Delete("k").ok());
  EXPECT_EQ(c.Get("k").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(c.Insert("k", "{}").ok());
  const Json body = Body(*c.Get("k"));
  EXPECT_EQ(body["n"], 0);
  EXPECT_TRUE(body["g"].empty());
}

TEST_F(HotCollectionTest, AutoFieldGrowsUnderContentionAndShrinksWhenQuiet) {
  Collection c = Open("auto");
  // One conflict within a second grows the field; a quiet key (no conflicts) may shrink.
  ASSERT_TRUE(c.Declare(R"({"likes": {"fold": "sum", "shards": "auto", "max_shards": 16,
                                      "grow_conflicts_per_s": 0.5, "shrink_updates_per_s": 1000}})")
                  .ok());
  ASSERT_TRUE(c.Insert("hot", "{}").ok());
  std::atomic<int> acked = 0;
  std::atomic<int> failed = 0;
  std::atomic<bool> grew = false;
  // Writers hammer the one cell until a conflict has grown it: how soon two writers collide
  // depends on the scheduler, so the test waits for it (up to 60 s) instead of counting on it.
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000 && !grew.load(); ++i) {
        (c.Apply("hot", "likes", "1").ok() ? acked : failed).fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 1200 && !grew.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto info = c.Sharding("hot", "likes");
    if (info.ok() && info->active_cells > 1) grew = true;
  }
  grew = true;
  for (auto& t : threads) t.join();
  auto grown = c.Sharding("hot", "likes");
  ASSERT_TRUE(grown.ok());
  EXPECT_GT(grown->active_cells, 1u) << "8 writers on one cell conflict: it must grow";
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(Body(*c.Get("hot"))["likes"], acked.load());
  // Quiet: a trickle of updates; the maintenance thread halves the cells after the cooldown.
  uint32_t cells = grown->active_cells;
  for (int i = 0; i < 150 && cells > 1; ++i) {
    ASSERT_TRUE(c.Apply("hot", "likes", "1").ok());
    ++acked;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cells = c.Sharding("hot", "likes")->active_cells;
  }
  EXPECT_LT(cells, grown->active_cells) << "no shrink within 15 s of quiet";
  EXPECT_EQ(Body(*c.Get("hot"))["likes"], acked.load());
}

TEST_F(HotCollectionTest, AutoFieldGrownBeforeARestartShrinksWithoutWrites) {
  {
    Collection c = Open("idle");
    ASSERT_TRUE(
        c.Declare(R"({"likes": {"fold": "sum", "shards": "auto", "max_shards": 16}})").ok());
    ASSERT_TRUE(c.Insert("was-hot", "{}").ok());
    ASSERT_TRUE(c.Reshard("was-hot", "likes", 8).ok());
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(c.Apply("was-hot", "likes", "1").ok());
    ASSERT_EQ(c.Sharding("was-hot", "likes")->active_cells, 8u);
  }
  // A new process: its maintenance never saw the key written, and nobody writes it now.
  ASSERT_TRUE(db_->Close().ok());
  db_.reset();
  auto reopened =
      Database::OpenEmbedded({.data_dir = dir_, .nodes = 3, .buckets = 16, .sync = false});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  db_ = std::move(*reopened);
  Collection c = Open("idle");
  uint32_t cells = 8;
  for (int i = 0; i < 600 && cells > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto info = c.Sharding("was-hot", "likes");
    ASSERT_TRUE(info.ok()) << info.status();
    cells = info->active_cells;
  }
  EXPECT_EQ(cells, 1u) << "an idle grown key shrinks to its minimum within 60 s";
  EXPECT_EQ(Body(*c.Get("was-hot"))["likes"], 40);
}

TEST_F(HotCollectionTest, CustomFoldFromCxx) {
  ASSERT_TRUE(RegisterFold("longest_for_test", Json(""),
                           [](const Json& a, const Json& b) -> StatusOr<Json> {
                             const auto x = a.get<std::string>(), y = b.get<std::string>();
                             return Json(x.size() != y.size() ? (x.size() > y.size() ? x : y)
                                                              : std::max(x, y));
                           },
                           {"a", "bb", "cc", ""})
                  .ok());
  Collection c = Open("custom");
  ASSERT_TRUE(c.Declare(R"({"best": {"fold": "longest_for_test", "shards": 3}})").ok());
  ASSERT_TRUE(c.Insert("k", "{}").ok());
  for (const char* s : {"\"x\"", "\"hello\"", "\"abc\""}) ASSERT_TRUE(c.Apply("k", "best", s).ok());
  EXPECT_EQ(Body(*c.Get("k"))["best"], "hello");
  EXPECT_EQ(*FoldValues("sum", 2, 3), 5);
  EXPECT_EQ(RegisterFold("minus_public", 0,
                         [](const Json& a, const Json& b) -> StatusOr<Json> {
                           return Json(a.get<int>() - b.get<int>());
                         },
                         {1, 2, 3})
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(HotCollectionTest, CustomFoldOnJsonText) {
  ASSERT_TRUE(RegisterFoldText("text_max_for_test", "0",
                               [](std::string_view a, std::string_view b) -> StatusOr<std::string> {
                                 return std::string(
                                     std::stoll(std::string(a)) >= std::stoll(std::string(b)) ? a
                                                                                              : b);
                               },
                               {"1", "5", "3", "0"})
                  .ok());
  Collection c = Open("custom_text");
  ASSERT_TRUE(c.Declare(R"({"top": {"fold": "text_max_for_test", "shards": 3}})").ok());
  ASSERT_TRUE(c.Insert("k", "{}").ok());
  for (const char* s : {"4", "9", "2"}) ASSERT_TRUE(c.Apply("k", "top", s).ok());
  EXPECT_EQ(Body(*c.Get("k"))["top"], 9);
  EXPECT_EQ(*FoldValuesText("sum", "2", "3"), "5");
  EXPECT_EQ(*LiftOperandText("count", R"("anything")"), "1");
  EXPECT_EQ(*NeutralOfText("text_max_for_test"), "0");
  EXPECT_EQ(FoldValuesText("sum", "2", "{").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RegisterFoldText("text_minus_for_test", "0",
                             [](std::string_view a, std::string_view b) -> StatusOr<std::string> {
                               return std::to_string(std::stoll(std::string(a)) -
                                                     std::stoll(std::string(b)));
                             },
                             {"1", "2", "3"})
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
