// Collection's asynchronous operations on an embedded cluster: each callback gets what the
// synchronous call returns, collections with declared fields keep their rules, and WaitAsync
// and Close wait for every callback.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include "include/shoal/shoal.h"

namespace shoal {
namespace {

std::string TempDir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp == nullptr ? "/tmp" : tmp) + "/shoal-db-async-test-" +
                    std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Adapters from a callback to a future, so that a test reads like the synchronous API.
struct Wait {
  static std::pair<Collection::WriteCallback, std::future<StatusOr<uint64_t>>> Write() {
    auto promise = std::make_shared<std::promise<StatusOr<uint64_t>>>();
    auto future = promise->get_future();
    return {[promise](StatusOr<uint64_t> v) { promise->set_value(std::move(v)); },
            std::move(future)};
  }
  static std::pair<Collection::GetCallback, std::future<StatusOr<Document>>> Get() {
    auto promise = std::make_shared<std::promise<StatusOr<Document>>>();
    auto future = promise->get_future();
    return {[promise](StatusOr<Document> d) { promise->set_value(std::move(d)); },
            std::move(future)};
  }
};

StatusOr<uint64_t> UpsertNow(Collection& c, const std::string& key, const std::string& json) {
  auto [done, result] = Wait::Write();
  c.UpsertAsync(key, json, done);
  return result.get();
}
StatusOr<uint64_t> InsertNow(Collection& c, const std::string& key, const std::string& json) {
  auto [done, result] = Wait::Write();
  c.InsertAsync(key, json, done);
  return result.get();
}
StatusOr<uint64_t> UpdateNow(Collection& c, const std::string& key, const std::string& json) {
  auto [done, result] = Wait::Write();
  c.UpdateAsync(key, json, done);
  return result.get();
}
StatusOr<uint64_t> DeleteNow(Collection& c, const std::string& key) {
  auto [done, result] = Wait::Write();
  c.DeleteAsync(key, done);
  return result.get();
}
StatusOr<Document> GetNow(Collection& c, const std::string& key) {
  auto [done, result] = Wait::Get();
  c.GetAsync(key, done);
  return result.get();
}

TEST(DatabaseAsyncTest, EachCallbackGetsWhatTheSynchronousCallReturns) {
  const std::string dir = TempDir("results");
  auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
  ASSERT_TRUE(db.ok()) << db.status();
  auto users = (*db)->GetCollection("users");
  ASSERT_TRUE(users.ok()) << users.status();

  auto inserted = InsertNow(*users, "u1", R"({"age": 1})");
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  EXPECT_EQ(InsertNow(*users, "u1", "{}").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(UpdateNow(*users, "nobody", "{}").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(UpsertNow(*users, "bad", "{not json").status().code(), StatusCode::kInvalidArgument);
  auto updated = UpdateNow(*users, "u1", R"({"age": 2})");
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_GT(*updated, *inserted);
  auto got = GetNow(*users, "u1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->key, "u1");
  EXPECT_EQ(got->json, R"({"age": 2})");
  EXPECT_EQ(got->version, *updated);
  ASSERT_TRUE(DeleteNow(*users, "u1").ok());
  EXPECT_EQ(GetNow(*users, "u1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(DeleteNow(*users, "u1").status().code(), StatusCode::kNotFound);
  // What the asynchronous calls wrote, the synchronous API reads, and the other way round.
  ASSERT_TRUE(users->Upsert("s", R"({"x": 1})").ok());
  auto s = GetNow(*users, "s");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->json, R"({"x": 1})");
  ASSERT_TRUE(UpsertNow(*users, "a", R"({"y": 2})").ok());
  auto a = users->Get("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->json, R"({"y": 2})");
  ASSERT_TRUE((*db)->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST(DatabaseAsyncTest, DeclaredFieldsKeepTheirRules) {
  const std::string dir = TempDir("declared");
  auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
  ASSERT_TRUE(db.ok()) << db.status();
  auto posts = (*db)->GetCollection("posts");
  ASSERT_TRUE(posts.ok()) << posts.status();
  ASSERT_TRUE(posts->Declare(R"({"votes": {"fold": "sum", "neutral": 0, "shards": 4}})").ok());
  ASSERT_TRUE(InsertNow(*posts, "p", R"({"title": "t"})").ok());
  // A write that sets the declared field is refused, as Insert/Upsert refuse it.
  EXPECT_EQ(UpsertNow(*posts, "p", R"({"votes": 5})").status().code(),
            StatusCode::kInvalidArgument);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(posts->Apply("p", "votes", "1").ok());
  auto got = GetNow(*posts, "p");  // folded, as Get folds
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_NE(got->json.find("\"votes\":3"), std::string::npos) << got->json;
  // Deleting resets the field: a new document starts from neutral.
  ASSERT_TRUE(DeleteNow(*posts, "p").ok());
  ASSERT_TRUE(InsertNow(*posts, "p", R"({"title": "again"})").ok());
  auto again = GetNow(*posts, "p");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->json.find("\"votes\":0"), std::string::npos) << again->json;
  ASSERT_TRUE((*db)->Close().ok());
  std::filesystem::remove_all(dir);
}

// Many operations in flight from one thread, chained from their callbacks; WaitAsync returns
// only after the last callback, and every acknowledged write reads back.
TEST(DatabaseAsyncTest, WaitAsyncWaitsForEveryCallback) {
  const std::string dir = TempDir("wait");
  auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 3, .buckets = 8, .sync = false});
  ASSERT_TRUE(db.ok()) << db.status();
  auto items = (*db)->GetCollection("items");
  ASSERT_TRUE(items.ok()) << items.status();
  constexpr int kChains = 8;
  constexpr int kPerChain = 25;
  std::atomic<int> acknowledged{0};
  std::atomic<int> failed{0};
  Collection c = *items;
  std::function<void(int, int)> next = [&](int chain, int step) {
    const std::string key = "k" + std::to_string(chain) + "-" + std::to_string(step);
    c.UpsertAsync(key, R"({"s": )" + std::to_string(step) + "}",
                  [&, chain, step](StatusOr<uint64_t> v) {
                    ++(v.ok() ? acknowledged : failed);
                    if (step + 1 < kPerChain) next(chain, step + 1);
                  });
  };
  for (int chain = 0; chain < kChains; ++chain) next(chain, 0);
  (*db)->WaitAsync();
  EXPECT_EQ(acknowledged.load(), kChains * kPerChain);
  EXPECT_EQ(failed.load(), 0);
  for (int chain = 0; chain < kChains; ++chain) {
    for (int step = 0; step < kPerChain; ++step) {
      auto doc = items->Get("k" + std::to_string(chain) + "-" + std::to_string(step));
      ASSERT_TRUE(doc.ok()) << doc.status();
      EXPECT_EQ(doc->json, R"({"s": )" + std::to_string(step) + "}");
    }
  }
  // Close waits too: these callbacks have all run when it returns.
  std::atomic<int> late{0};
  for (int i = 0; i < 20; ++i) {
    c.GetAsync("k0-0", [&](StatusOr<Document> d) { late += d.ok() ? 1 : 0; });
  }
  ASSERT_TRUE((*db)->Close().ok());
  EXPECT_EQ(late.load(), 20);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
