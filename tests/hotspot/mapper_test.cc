#include "include/shoal/mapper.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/hotspot_json.h"
#include "include/shoal/shoal.h"

namespace shoal {
namespace {

struct Question {
  std::string id;
  std::string text;
  int64_t votes = 0;
  std::vector<std::string> tags;
};

struct Counter {
  int64_t id = 0;
  int64_t total = 0;
  int64_t visits = 0;
  int64_t divisor = 0;
};

EntityMapper<Question> QuestionMapper() {
  return EntityMapper<Question>("questions")
      .Id(&Question::id)
      .Field("text", &Question::text)
      .Sharded("votes", &Question::votes,
               {.fold = "sum", .neutral = 0, .shards = 10, .automatic = false})
      .Sharded("tags", &Question::tags,
               {.fold = "set_union", .neutral = {}, .shards = 4, .automatic = false});
}

// An embedded database in a fresh directory, removed at the end of the test.
class MapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = std::string(tmp == nullptr ? "/tmp" : tmp) + "/shoal-mapper-test-" +
           std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    auto db = Database::OpenEmbedded({.data_dir = dir_, .nodes = 2, .buckets = 8, .sync = false});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  void TearDown() override {
    if (db_ != nullptr) {
      EXPECT_TRUE(db_->Close().ok());
    }
    db_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(MapperTest, DeclareCreateLoadSaveRoundTrip) {
  const auto mapper = QuestionMapper();
  auto schema = mapper.SchemaJson();
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(Json::parse(*schema),
            Json::parse(R"({"votes": {"fold": "sum", "neutral": 0, "shards": 10},
                            "tags": {"fold": "set_union", "shards": 4}})"));
  auto questions = mapper.Open(*db_);
  ASSERT_TRUE(questions.ok()) << questions.status();

  auto created =
      mapper.Create(*questions, {.id = "42", .text = "How?", .votes = 76, .tags = {"education"}});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(
      mapper.Create(*questions, {.id = "42", .text = "", .votes = 0, .tags = {}}).status().code(),
      StatusCode::kAlreadyExists);
  // The sharded members are not in the main document, and cannot be written into it.
  EXPECT_EQ(questions->Upsert("42", R"({"text": "How?", "votes": 3})").status().code(),
            StatusCode::kInvalidArgument);

  auto loaded = mapper.Load(*questions, "42");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->key(), "42");
  EXPECT_EQ((*loaded)->id, "42");
  EXPECT_EQ((*loaded)->text, "How?");
  EXPECT_EQ((*loaded)->votes, 76);
  EXPECT_EQ((*loaded)->tags, std::vector<std::string>{"education"});

  // Figure 4: the visible value and the pending delta both change.
  ASSERT_TRUE(loaded->Apply(&Question::votes, 3).ok());
  ASSERT_TRUE(loaded->Apply(&Question::votes, -1).ok());
  ASSERT_TRUE(loaded->Apply(&Question::tags, "debate").ok());
  EXPECT_EQ((*loaded)->votes, 78);
  EXPECT_EQ((*loaded)->tags, (std::vector<std::string>{"debate", "education"}));
  EXPECT_EQ(*loaded->PendingDelta(&Question::votes), Json(2));
  EXPECT_EQ(*loaded->PendingDelta(&Question::tags), Json::parse(R"(["debate"])"));
  EXPECT_EQ(loaded->Apply(&Question::text, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(loaded->Apply(&Question::votes, "not a number").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*loaded)->votes, 78);
  loaded->mutable_value().text = "How do you plan to improve public education?";

  // Figure 5: the main document, then one shard per field; the deltas are neutral again.
  ASSERT_TRUE(mapper.Save(*questions, *loaded).ok());
  EXPECT_EQ(*loaded->PendingDelta(&Question::votes), Json(0));
  EXPECT_EQ(*loaded->PendingDelta(&Question::tags), Json::array());
  EXPECT_EQ((*loaded)->votes, 78);

  auto reloaded = mapper.Load(*questions, "42", {.mode = ReadMode::kSnapshot});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ((*reloaded)->text, "How do you plan to improve public education?");
  EXPECT_EQ((*reloaded)->votes, 78);
  EXPECT_EQ((*reloaded)->tags, (std::vector<std::string>{"debate", "education"}));
  EXPECT_EQ(mapper.Load(*questions, "43").status().code(), StatusCode::kNotFound);

  // A stored member of the wrong type is an error, not an exception.
  ASSERT_TRUE(questions->Upsert("44", R"({"text": 17})").ok());
  EXPECT_EQ(mapper.Load(*questions, "44").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(MapperTest, ConcurrentVotesThroughLoadApplySave) {
  const auto mapper = QuestionMapper();
  auto questions = mapper.Open(*db_);
  ASSERT_TRUE(questions.ok()) << questions.status();
  ASSERT_TRUE(
      mapper.Create(*questions, {.id = "hot", .text = "Hot?", .votes = 10, .tags = {}}).ok());
  constexpr int kThreads = 8;
  constexpr int kVotesPerThread = 200;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Collection collection = *questions;
      for (int i = 0; i < kVotesPerThread; ++i) {
        auto question = mapper.Load(collection, "hot");
        if (!question.ok() || !question->Apply(&Question::votes, 1).ok() ||
            !mapper.Save(collection, *question).ok()) {
          ++failures[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::accumulate(failures.begin(), failures.end(), 0), 0);
  auto total = mapper.Load(*questions, "hot");
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ((*total)->votes, 10 + kThreads * kVotesPerThread);
  auto sharding = questions->Sharding("hot", "votes");
  ASSERT_TRUE(sharding.ok()) << sharding.status();
  EXPECT_EQ(sharding->kind, "static");
  EXPECT_EQ(sharding->active_cells, 10u);
}

TEST_F(MapperTest, SetUnionFromSeveralEntities) {
  const auto mapper = QuestionMapper();
  auto questions = mapper.Open(*db_);
  ASSERT_TRUE(questions.ok()) << questions.status();
  ASSERT_TRUE(
      mapper.Create(*questions, {.id = "q", .text = "?", .votes = 0, .tags = {"b", "a"}}).ok());
  auto first = mapper.Load(*questions, "q");
  auto second = mapper.Load(*questions, "q");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ((*first)->tags, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(first->Apply(&Question::tags, "c").ok());
  ASSERT_TRUE(first->Apply(&Question::tags, std::vector<std::string>{"a", "d"}).ok());
  ASSERT_TRUE(second->Apply(&Question::tags, "e").ok());
  ASSERT_TRUE(second->Apply(&Question::tags, "c").ok());
  ASSERT_TRUE(mapper.Save(*questions, *second).ok());
  ASSERT_TRUE(mapper.Save(*questions, *first).ok());
  auto loaded = mapper.Load(*questions, "q");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->tags, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TEST_F(MapperTest, CustomFoldAndRefusedFold) {
  const Status gcd = RegisterFold("mapper_test_gcd", 0,
                                  [](const Json& a, const Json& b) -> StatusOr<Json> {
                                    if (!a.is_number_integer() || !b.is_number_integer()) {
                                      return InvalidArgumentError("gcd takes integers");
                                    }
                                    return Json(std::gcd(a.get<int64_t>(), b.get<int64_t>()));
                                  },
                                  {12, 18, 7, 0, 30});
  ASSERT_TRUE(gcd.ok() || gcd.code() == StatusCode::kAlreadyExists) << gcd;
  // Subtraction is neither commutative nor associative.
  EXPECT_EQ(RegisterFold("mapper_test_minus", 0,
                         [](const Json& a, const Json& b) -> StatusOr<Json> {
                           return Json(a.get<int64_t>() - b.get<int64_t>());
                         },
                         {1, 2, 5})
                .code(),
            StatusCode::kInvalidArgument);
  const auto unknown =
      EntityMapper<Counter>("counters")
          .Id(&Counter::id)
          .Sharded("divisor", &Counter::divisor,
                   {.fold = "mapper_test_minus", .neutral = {}, .shards = 2, .automatic = false});
  EXPECT_EQ(unknown.Open(*db_).status().code(), StatusCode::kInvalidArgument);

  const auto mapper =
      EntityMapper<Counter>("counters")
          .Id(&Counter::id)
          .Sharded("divisor", &Counter::divisor,
                   {.fold = "mapper_test_gcd", .neutral = {}, .shards = 3, .automatic = false});
  auto counters = mapper.Open(*db_);
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_TRUE(mapper.Create(*counters, {.id = 7, .total = 0, .visits = 0, .divisor = 84}).ok());
  auto a = mapper.Load(*counters, "7");
  auto b = mapper.Load(*counters, "7");
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ((*a)->id, 7);
  EXPECT_EQ((*a)->divisor, 84);
  ASSERT_TRUE(a->Apply(&Counter::divisor, 60).ok());
  EXPECT_EQ((*a)->divisor, 12);
  ASSERT_TRUE(b->Apply(&Counter::divisor, 126).ok());
  EXPECT_EQ((*b)->divisor, 42);
  ASSERT_TRUE(mapper.Save(*counters, *a).ok());
  ASSERT_TRUE(mapper.Save(*counters, *b).ok());
  auto loaded = mapper.Load(*counters, "7");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->divisor, 6);
  EXPECT_EQ(mapper.Load(*counters, "seven").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(MapperTest, DynamicMembersTotalAfterCompact) {
  const auto mapper =
      EntityMapper<Counter>("visits")
          .Id(&Counter::id)
          .Sharded("total", &Counter::total,
                   {.fold = "sum", .neutral = 0, .shards = 0, .automatic = false})
          .Sharded("visits", &Counter::visits,
                   {.fold = "count", .neutral = {}, .shards = 0, .automatic = false});
  auto visits = mapper.Open(*db_);
  ASSERT_TRUE(visits.ok()) << visits.status();
  // A count cannot start above neutral: each update counts one, whatever its operand.
  EXPECT_EQ(
      mapper.Create(*visits, {.id = 1, .total = 5, .visits = 3, .divisor = 0}).status().code(),
      StatusCode::kInvalidArgument);
  ASSERT_TRUE(mapper.Create(*visits, {.id = 1, .total = 5, .visits = 0, .divisor = 0}).ok());
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Collection collection = *visits;
      for (int i = 0; i < kRounds; ++i) {
        auto counter = mapper.Load(collection, "1");
        // Two visits worth 2 each per round: the count delta is sent as its two operands.
        if (!counter.ok() || !counter->Apply(&Counter::total, 2).ok() ||
            !counter->Apply(&Counter::total, 2).ok() ||
            !counter->Apply(&Counter::visits, "a").ok() ||
            !counter->Apply(&Counter::visits, "b").ok() ||
            !mapper.Save(collection, *counter).ok()) {
          ++failures[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::accumulate(failures.begin(), failures.end(), 0), 0);
  auto before = visits->Sharding("1", "visits");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->kind, "dynamic");
  ASSERT_TRUE(visits->Compact("1").ok());
  auto after = visits->Sharding("1", "visits");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->pending_cells, 0u);
  auto loaded = mapper.Load(*visits, "1");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->total, 5 + 4 * kThreads * kRounds);
  EXPECT_EQ((*loaded)->visits, 2 * kThreads * kRounds);
}

TEST_F(MapperTest, MistakesWhileBuildingAreReported) {
  const auto twice = EntityMapper<Question>("q1")
                         .Id(&Question::id)
                         .Field("text", &Question::text)
                         .Field("text", &Question::tags);
  EXPECT_EQ(twice.Open(*db_).status().code(), StatusCode::kInvalidArgument);
  const auto member_twice = EntityMapper<Question>("q2")
                                .Id(&Question::id)
                                .Field("a", &Question::text)
                                .Field("b", &Question::text);
  EXPECT_EQ(member_twice.SchemaJson().status().code(), StatusCode::kInvalidArgument);
  const auto no_fold =
      EntityMapper<Question>("q3")
          .Id(&Question::id)
          .Sharded("votes", &Question::votes,
                   {.fold = "no_such_fold", .neutral = {}, .shards = 2, .automatic = false});
  EXPECT_EQ(no_fold.Open(*db_).status().code(), StatusCode::kInvalidArgument);
  const auto automatic_with_count =
      EntityMapper<Question>("q4")
          .Id(&Question::id)
          .Sharded("votes", &Question::votes,
                   {.fold = "sum", .neutral = {}, .shards = 4, .automatic = true});
  EXPECT_EQ(automatic_with_count.SchemaJson().status().code(), StatusCode::kInvalidArgument);
  const auto no_id = EntityMapper<Question>("q5").Field("text", &Question::text);
  EXPECT_EQ(no_id.Open(*db_).status().code(), StatusCode::kFailedPrecondition);
  const auto automatic =
      EntityMapper<Question>("q6")
          .Id(&Question::id)
          .Sharded("votes", &Question::votes,
                   {.fold = "sum", .neutral = {}, .shards = 0, .automatic = true});
  auto schema = automatic.SchemaJson();
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(Json::parse(*schema), Json::parse(R"({"votes": {"fold": "sum", "shards": "auto"}})"));
}

}  // namespace
}  // namespace shoal
