#include "src/transport/thread_runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace shoal::transport {
namespace {

class CountingService : public Service {
 public:
  Response Handle(const Address& from, const Request&) override {
    ++handled;
    last_from = from;
    return Response::Ok(WriteResponse{.version = 7});
  }
  std::atomic<int> handled{0};
  Address last_from;
};

TEST(ThreadRuntimeTest, CallRunsTheHandlerAndReturnsItsResponse) {
  ThreadRuntime runtime;
  auto service = std::make_shared<CountingService>();
  runtime.Serve(Address::Node(NodeId(1)), service);
  ThreadRuntime::ScopedActor actor(runtime, Address::Client(3));
  auto r = runtime.Call(Address::Node(NodeId(1)), GetRequest{}, 1000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<WriteResponse>(r->body).version, 7u);
  EXPECT_EQ(service->last_from, Address::Client(3));
  EXPECT_EQ(runtime.Call(Address::Node(NodeId(2)), GetRequest{}, 1000).status().code(),
            StatusCode::kUnavailable);
}

TEST(ThreadRuntimeTest, StopCancelsSleepingTasks) {
  ThreadRuntime runtime;
  const Address node = Address::Node(NodeId(1));
  runtime.Serve(node, std::make_shared<CountingService>());
  std::atomic<bool> cancelled{false};
  runtime.Spawn(node, "sleeper",
                [&] { cancelled = runtime.Sleep(60'000'000).code() == StatusCode::kCancelled; });
  runtime.Stop(node);
  runtime.Shutdown();
  EXPECT_TRUE(cancelled);
}

// Await returns once its wakeup is set, not after its poll or limit: a replicated write wakes
// on its commit instead of polling (Runtime::Await).
TEST(ThreadRuntimeTest, AwaitReturnsWhenItsWakeupIsSet) {
  ThreadRuntime runtime;
  const Address node = Address::Node(NodeId(1));
  runtime.Serve(node, std::make_shared<CountingService>());
  Wakeup wakeup;
  std::atomic<bool> returned{false};
  std::atomic<int64_t> waited{0};
  runtime.Spawn(node, "waiter", [&] {
    const Micros start = runtime.Now();
    Status status = runtime.Await(wakeup, /*poll=*/500, /*limit=*/60'000'000);
    waited = runtime.Now() - start;
    returned = status.ok();
  });
  wakeup.Set();
  runtime.JoinTasks();
  EXPECT_TRUE(returned);
  EXPECT_TRUE(wakeup.IsSet());
  // Without the wakeup it would have waited kLongestAwait (its own bound on one wait).
  EXPECT_LT(waited.load(), ThreadRuntime::kLongestAwait * 20);
  // Unset, it returns after at most its limit, and kCancelled once its process is stopped.
  Wakeup never;
  ThreadRuntime::ScopedActor actor(runtime, node);
  EXPECT_TRUE(runtime.Await(never, 500, /*limit=*/1000).ok());
  runtime.Stop(node);
  EXPECT_EQ(runtime.Await(never, 500, 60'000'000).code(), StatusCode::kCancelled);
  runtime.Shutdown();
}

TEST(ThreadRuntimeTest, ConcurrentCallsFromManyThreads) {
  ThreadRuntime runtime;
  auto service = std::make_shared<CountingService>();
  runtime.Serve(Address::Node(NodeId(1)), service);
  for (uint32_t c = 0; c < 4; ++c) {
    runtime.Spawn(Address::Client(c), "client", [&] {
      for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(runtime.Call(Address::Node(NodeId(1)), GetRequest{}, 1000).ok());
      }
    });
  }
  runtime.JoinTasks();
  EXPECT_EQ(service->handled.load(), 4000);
}

TEST(ThreadRuntimeTest, RunAtLowerPriorityActsForTheCallerAndReturnsWhenDone) {
  ThreadRuntime runtime;
  const Address node = Address::Node(NodeId(1));
  runtime.Serve(node, std::make_shared<CountingService>());
  ThreadRuntime::ScopedActor actor(runtime, node);
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id outer;
  std::thread::id inner;
  Address acting = Address::Client(9);
  bool slept = false;
  runtime.RunAtLowerPriority(5, [&] {
    outer = std::this_thread::get_id();
    acting = runtime.Self();
    slept = runtime.Sleep(1).ok();
    runtime.RunAtLowerPriority(5, [&] { inner = std::this_thread::get_id(); });
  });
  EXPECT_EQ(acting, node);
  EXPECT_TRUE(slept);
#ifdef __linux__
  EXPECT_NE(outer, caller);  // a thread of its own, whose priority can be lowered
#endif
  EXPECT_EQ(inner, outer);  // nested: inline
  std::thread::id off;
  runtime.RunAtLowerPriority(0, [&] { off = std::this_thread::get_id(); });
  EXPECT_EQ(off, caller);  // 0: inline
}

TEST(ThreadRuntimeTest, RunAtLowerPriorityIsCancelledWithItsProcess) {
  ThreadRuntime runtime;
  const Address node = Address::Node(NodeId(1));
  runtime.Serve(node, std::make_shared<CountingService>());
  std::atomic<bool> cancelled{false};
  runtime.Spawn(node, "mover", [&] {
    runtime.RunAtLowerPriority(
        19, [&] { cancelled = runtime.Sleep(60'000'000).code() == StatusCode::kCancelled; });
  });
  runtime.Stop(node);
  runtime.Shutdown();
  EXPECT_TRUE(cancelled);
}

}  // namespace
}  // namespace shoal::transport
