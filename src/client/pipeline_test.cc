#include "src/client/pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/client/fake_node.h"
#include "src/transport/thread_runtime.h"

namespace shoal::client {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fake node

constexpr NodeId kNode(1);
constexpr transport::Micros kLong = 30'000'000;

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_shared<FakeNode>(runtime_, MapOn(2, 2));
    runtime_.Serve(Address::Node(kNode), node_);
  }
  void TearDown() override { runtime_.Shutdown(); }

  // Submits `request` and returns a future of its result.
  std::future<StatusOr<Response>> Start(Pipeline& pipeline, Request request,
                                        transport::Micros timeout = kLong) {
    auto promise = std::make_shared<std::promise<StatusOr<Response>>>();
    auto future = promise->get_future();
    pipeline.Submit(kNode, std::move(request), timeout, [promise](StatusOr<Response> result) {
      promise->set_value(std::move(result));
    });
    return future;
  }

  transport::ThreadRuntime runtime_;
  std::shared_ptr<FakeNode> node_;
};

uint64_t VersionIn(const StatusOr<Response>& result) {
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || !result->status.ok()) return 0;
  return std::get<transport::WriteResponse>(result->body).version;
}

TEST_F(PipelineTest, ALoneOperationGoesAtOnceAsASingleCall) {
  Pipeline pipeline(runtime_);
  auto result = Start(pipeline, Upsert("a")).get();
  EXPECT_EQ(VersionIn(result), VersionOf("a"));
  EXPECT_EQ(node_->calls(), (std::vector<std::vector<std::string>>{{"a"}}));
  EXPECT_EQ(pipeline.counters().single_calls, 1u);
  EXPECT_EQ(pipeline.counters().batch_calls, 0u);
}

TEST_F(PipelineTest, OperationsQueuedBehindACallGoOutAsOneBatchWithTheirOwnResults) {
  Pipeline pipeline(runtime_, {.limits = {}, .max_calls_in_flight = 1});
  node_->hold_all = true;
  auto first = Start(pipeline, Upsert("first"));
  ASSERT_TRUE(WaitFor([&] { return node_->held.load() == 1; }));
  auto a = Start(pipeline, Upsert("a"));
  auto dup = Start(pipeline, Upsert("dup-b"));
  auto wrong = Start(pipeline, Upsert("wrong-c"));
  node_->hold_all = false;

  EXPECT_EQ(VersionIn(first.get()), VersionOf("first"));
  EXPECT_EQ(VersionIn(a.get()), VersionOf("a"));
  auto dup_result = dup.get();
  ASSERT_TRUE(dup_result.ok());
  EXPECT_EQ(dup_result->status.code(), StatusCode::kAlreadyExists);
  auto wrong_result = wrong.get();
  ASSERT_TRUE(wrong_result.ok());
  EXPECT_EQ(transport::ClusterErrorOf(wrong_result->status), ClusterError::kWrongShard);
  ASSERT_NE(wrong_result->route, nullptr);
  EXPECT_EQ(wrong_result->route->epoch(), MapEpoch(2));
  EXPECT_EQ(node_->calls(),
            (std::vector<std::vector<std::string>>{{"first"}, {"a", "dup-b", "wrong-c"}}));
  const PipelineCounters counters = pipeline.counters();
  EXPECT_EQ(counters.single_calls, 1u);
  EXPECT_EQ(counters.batch_calls, 1u);
  EXPECT_EQ(counters.batched_operations, 3u);
}

// The closed loop of the benchmark: every callback starts its chain's next operation. The
// operations started during one delivery leave together, so the calls are far fewer than the
// operations.
TEST_F(PipelineTest, OperationsStartedByCallbacksLeaveTogetherWhenTheDeliveryEnds) {
  constexpr int kChains = 16;
  constexpr int kPerChain = 50;
  Pipeline pipeline(runtime_, {.limits = {}, .max_calls_in_flight = 1});
  std::atomic<int> finished{0};
  std::atomic<int> wrong{0};
  std::function<void(int, int)> next = [&](int chain, int step) {
    const std::string key = "k" + std::to_string(chain) + "-" + std::to_string(step);
    pipeline.Submit(kNode, Upsert(key), kLong, [&, chain, step, key](StatusOr<Response> result) {
      if (!result.ok() || !result->status.ok() ||
          std::get<transport::WriteResponse>(result->body).version != VersionOf(key)) {
        ++wrong;
      }
      if (step + 1 < kPerChain) {
        next(chain, step + 1);
      } else {
        ++finished;
      }
    });
  };
  for (int chain = 0; chain < kChains; ++chain) next(chain, 0);
  ASSERT_TRUE(WaitFor([&] { return finished.load() == kChains; }));
  EXPECT_EQ(wrong.load(), 0);
  const PipelineCounters counters = pipeline.counters();
  const uint64_t calls = counters.single_calls + counters.batch_calls;
  std::printf("%d operations in %llu calls (%llu batches of %llu)\n", kChains * kPerChain,
              static_cast<unsigned long long>(calls),
              static_cast<unsigned long long>(counters.batch_calls),
              static_cast<unsigned long long>(counters.batched_operations));
  EXPECT_EQ(counters.single_calls + counters.batched_operations,
            static_cast<uint64_t>(kChains * kPerChain));
  // One call in flight: after the start, every call carries what the previous one's delivery
  // started, the 16 chains together.
  EXPECT_LE(calls, static_cast<uint64_t>(kPerChain * 2 + kChains));
}

TEST_F(PipelineTest, AnOperationStillQueuedAtItsDeadlineLeavesUnsent) {
  Pipeline pipeline(runtime_, {.limits = {}, .max_calls_in_flight = 1});
  node_->hold_all = true;
  auto first = Start(pipeline, Upsert("first"));
  ASSERT_TRUE(WaitFor([&] { return node_->held.load() == 1; }));
  auto late = Start(pipeline, Upsert("late"), /*timeout=*/1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  node_->hold_all = false;
  EXPECT_EQ(VersionIn(first.get()), VersionOf("first"));
  auto late_result = late.get();
  ASSERT_FALSE(late_result.ok());
  EXPECT_EQ(late_result.status().code(), StatusCode::kUnavailable);  // certainly not sent
  EXPECT_EQ(node_->calls(), (std::vector<std::vector<std::string>>{{"first"}}));
  EXPECT_EQ(pipeline.counters().expired_in_queue, 1u);
}

TEST_F(PipelineTest, RequestsThatCannotBeBatchedGoAlone) {
  Pipeline pipeline(runtime_, {.limits = {}, .max_calls_in_flight = 1});
  transport::GetRequest get = Get("t");
  get.include_tombstones = true;
  auto result = Start(pipeline, get).get();
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->status.ok());
  EXPECT_EQ(node_->calls(), (std::vector<std::vector<std::string>>{{"t"}}));
  EXPECT_EQ(pipeline.counters().single_calls + pipeline.counters().batch_calls, 0u);
}

// A runtime whose CallAsync fails every call at once, on the calling thread (as GrpcRuntime does
// for an unknown address); everything else is a ThreadRuntime's.
class FailingAtOnceRuntime final : public transport::Runtime {
 public:
  transport::Micros Now() const override { return inner_.Now(); }
  Status Sleep(transport::Micros micros) override { return inner_.Sleep(micros); }
  StatusOr<Response> Call(const Address& to, Request request, transport::Micros timeout) override {
    return inner_.Call(to, std::move(request), timeout);
  }
  void CallAsync(const Address&, Request, transport::Micros, CallDone done) override {
    done(UnavailableError("nobody serves it"));
  }
  void Spawn(const Address& owner, std::string name, std::function<void()> fn) override {
    inner_.Spawn(owner, std::move(name), std::move(fn));
  }
  void Serve(const Address& self, std::shared_ptr<transport::Service> service) override {
    inner_.Serve(self, std::move(service));
  }
  void Stop(const Address& self) override { inner_.Stop(self); }
  Address Self() const override { return inner_.Self(); }
  bool Alive() const override { return inner_.Alive(); }
  uint64_t RandomU64() override { return inner_.RandomU64(); }
  Status Failpoint(std::string_view name) override { return inner_.Failpoint(name); }

 private:
  transport::ThreadRuntime inner_;
};

// A callback that resubmits after an immediate failure must not recurse: the trampoline runs
// every result at the outermost delivery, so the stack stays flat however long the loop runs.
TEST(PipelineDeliveryTest, ImmediateFailuresDoNotNestCallbacks) {
  FailingAtOnceRuntime runtime;
  Pipeline pipeline(runtime, {.limits = {}, .max_calls_in_flight = 1});
  constexpr int kRounds = 100'000;
  int depth = 0;
  int max_depth = 0;
  int rounds = 0;
  int unavailable = 0;
  std::function<void()> submit = [&] {
    pipeline.Submit(kNode, Upsert("x"), kLong, [&](StatusOr<Response> result) {
      ++depth;
      max_depth = std::max(max_depth, depth);
      if (!result.ok() && result.status().code() == StatusCode::kUnavailable) ++unavailable;
      if (++rounds < kRounds) submit();
      --depth;
    });
  };
  submit();  // everything runs on this thread before Submit returns
  EXPECT_EQ(rounds, kRounds);
  EXPECT_EQ(unavailable, kRounds);
  EXPECT_EQ(max_depth, 1);
}

}  // namespace
}  // namespace shoal::client
