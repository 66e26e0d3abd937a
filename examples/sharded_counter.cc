// A hot counter: declares `likes` a sharded field of the collection, so that concurrent
// increments land on different shard documents instead of conflicting on one, then reads the
// folded total (docs/design/hotspot.md).
//
//   example_sharded_counter shoal://127.0.0.1:7400   (a running cluster: see connect_write_read.cc)

#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"

namespace {

int Fail(const char* what, const shoal::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  return 1;
}

constexpr int kThreads = 4;
constexpr int kLikesPerThread = 25;

}  // namespace

int main(int argc, char** argv) {
  const char* uri = argc > 1 ? argv[1] : "shoal://127.0.0.1:7400";
  auto db = shoal::Database::Connect(uri);
  if (!db.ok()) return Fail("connect", db.status());
  auto posts = (*db)->GetCollection("posts");
  if (!posts.ok()) return Fail("collection", posts.status());
  // Declare creates the collection if it does not exist yet.
  if (shoal::Status s = posts->Declare(R"({"likes": {"fold": "sum", "neutral": 0, "shards": 8}})");
      !s.ok()) {
    return Fail("declare", s);
  }
  if (auto written = posts->Upsert("post-1", R"({"title": "Hello"})"); !written.ok()) {
    return Fail("upsert", written.status());
  }

  // The Collection handle is thread-safe: every thread applies its increments to the same field.
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([collection = *posts]() mutable {
      for (int i = 0; i < kLikesPerThread; ++i) {
        if (auto applied = collection.Apply("post-1", "likes", "1"); !applied.ok()) {
          std::fprintf(stderr, "apply: %s\n", applied.status().ToString().c_str());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  // Get folds the shards: "likes" holds the total.
  auto post = posts->Get("post-1");
  if (!post.ok()) return Fail("get", post.status());
  std::printf("%s\n", post->json.c_str());
  auto sharding = posts->Sharding("post-1", "likes");
  if (!sharding.ok()) return Fail("sharding", sharding.status());
  std::printf("likes: %s field, %u shards on %u buckets\n", sharding->kind.c_str(),
              sharding->active_cells, sharding->distinct_buckets);
  return (*db)->Close().ok() ? 0 : 1;
}
