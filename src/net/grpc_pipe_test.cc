// The pipe (grpc_pipe.h) through GrpcRuntime::CallAsync: many calls in flight on one stream,
// messages at the size limit, late replies, and a server that goes away.

#include "src/net/grpc_pipe.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/net/grpc_runtime.h"
#include "src/net/test_echo_service.h"

namespace shoal::net {
namespace {

using transport::Address;

constexpr transport::Micros kTimeout = 30'000'000;
constexpr size_t kLimit = 64 * 1024;

class PipeTest : public ::testing::TestWithParam<GrpcServerMode> {
 protected:
  const Address n1_ = Address::Node(NodeId(1));

  // A server serving node 1, and a client whose CallAsync goes over the pipe.
  void SetUp() override {
    server_ = StartServer();
    auto client = GrpcRuntime::Start(
        {.coordinator = server_->advertised_address(), .max_message_bytes = kLimit, .pipe = true});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    client_->SetAddress(n1_, server_->advertised_address());
  }

  std::unique_ptr<GrpcRuntime> StartServer() {
    auto server = GrpcRuntime::Start(
        {.listen = "127.0.0.1:0", .max_message_bytes = kLimit, .server_mode = GetParam()});
    EXPECT_TRUE(server.ok()) << server.status();
    services_.push_back(std::make_shared<EchoService>(**server));
    (*server)->Serve(n1_, services_.back());
    return std::move(*server);
  }

  StatusOr<transport::Response> CallAsyncAndWait(transport::Request request,
                                                 transport::Micros timeout = kTimeout) {
    auto promise = std::make_shared<std::promise<StatusOr<transport::Response>>>();
    auto future = promise->get_future();
    client_->CallAsync(
        n1_, std::move(request), timeout,
        [promise](StatusOr<transport::Response> r) { promise->set_value(std::move(r)); });
    return future.get();
  }

  void WaitUntilNoGetSleeps(const EchoService& service) {
    for (int i = 0; i < 5000 && service.sleeping.load() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(service.sleeping.load(), 0);
  }

  std::vector<std::shared_ptr<EchoService>> services_;
  std::unique_ptr<GrpcRuntime> server_;
  std::unique_ptr<GrpcRuntime> client_;
};

INSTANTIATE_TEST_SUITE_P(ServerModes, PipeTest,
                         ::testing::Values(GrpcServerMode::kSync, GrpcServerMode::kCallback),
                         [](const auto& info) {
                           return info.param == GrpcServerMode::kSync ? "Sync" : "Callback";
                         });

// 500 calls in flight at once on the one stream, each of its own size: each callback runs
// exactly once, with its own call's answer (replies come back in any order).
TEST_P(PipeTest, ManyCallsInFlightAreEachAnsweredOnceWithTheirOwnResponse) {
  constexpr int kCalls = 500;
  std::mutex mu;
  std::map<int, std::vector<uint64_t>> answers;  // call -> the versions it was answered with
  std::promise<void> all_done;
  int done = 0;
  for (int i = 0; i < kCalls; ++i) {
    client_->CallAsync(
        n1_, transport::WriteRequest{.body = std::string(i, 'b')}, kTimeout,
        [&, i](StatusOr<transport::Response> r) {
          bool last = false;
          {
            std::lock_guard<std::mutex> lock(mu);
            EXPECT_TRUE(r.ok()) << r.status();
            answers[i].push_back(r.ok() ? std::get<transport::WriteResponse>(r->body).version
                                        : ~0ULL);
            last = ++done == kCalls;
          }
          if (last) all_done.set_value();
        });
  }
  all_done.get_future().wait();
  // Returns once every callback has returned: nothing touches this test's locals after it.
  client_->Shutdown();
  ASSERT_EQ(answers.size(), static_cast<size_t>(kCalls));
  for (const auto& [i, versions] : answers) {
    EXPECT_EQ(versions, std::vector<uint64_t>{static_cast<uint64_t>(i)}) << "call " << i;
  }
}

// The pipe's framing does not count against the limit: the largest request a unary call takes
// passes over the pipe too, one byte more is refused before it is sent, and a response over the
// limit is replaced by a kResourceExhausted response; the stream serves on after each.
TEST_P(PipeTest, MessagesAtTheLimitPassAndOneByteMoreIsACleanError) {
  // The largest body whose envelope is within the limit (Call is always a unary call).
  size_t body = kLimit - 64;
  while (client_->Call(n1_, transport::WriteRequest{.body = std::string(body + 1, 'b')}, kTimeout)
             .ok()) {
    ++body;
  }
  auto at_limit = CallAsyncAndWait(transport::WriteRequest{.body = std::string(body, 'b')});
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(at_limit->body).version, body);
  auto over = CallAsyncAndWait(transport::WriteRequest{.body = std::string(body + 1, 'b')});
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted) << over.status();
  auto big_reply = CallAsyncAndWait(transport::WriteRequest{
      .primary_key = "big-reply", .body = std::string(kLimit / 2 + 16, 'b')});
  ASSERT_TRUE(big_reply.ok()) << big_reply.status();
  EXPECT_EQ(big_reply->status.code(), StatusCode::kResourceExhausted) << big_reply->status;
  auto after = CallAsyncAndWait(transport::WriteRequest{.body = "abc"});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(after->body).version, 3u);
}

// A call past its deadline ends with kDeadlineExceeded (it may have been handled); its reply,
// arriving later, is dropped, and the stream serves the calls before and after it.
TEST_P(PipeTest, ALateReplyIsDroppedAndTheStreamServesOn) {
  auto slow = CallAsyncAndWait(transport::GetRequest{}, 100'000);
  EXPECT_EQ(slow.status().code(), StatusCode::kDeadlineExceeded) << slow.status();
  auto during = CallAsyncAndWait(transport::WriteRequest{.body = "ab"});
  ASSERT_TRUE(during.ok()) << during.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(during->body).version, 2u);
  ASSERT_NO_FATAL_FAILURE(WaitUntilNoGetSleeps(*services_.front()));  // the late reply was sent
  auto after = CallAsyncAndWait(transport::WriteRequest{.body = "abcd"});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(after->body).version, 4u);
}

// A server that shuts down with a call in flight: that call ends once, with an error; once its
// stream has failed, a call to its address is refused as certainly not handled (kUnavailable);
// once the node serves on a new server, the next call opens a new stream to it.
TEST_P(PipeTest, AServerThatGoesAwayEndsItsCallsAndTheNextStreamReachesItsSuccessor) {
  ASSERT_TRUE(CallAsyncAndWait(transport::WriteRequest{.body = "a"}).ok());
  std::promise<StatusOr<transport::Response>> in_flight;
  std::atomic<int> callbacks{0};
  client_->CallAsync(n1_, transport::GetRequest{}, kTimeout, [&](StatusOr<transport::Response> r) {
    if (++callbacks == 1) in_flight.set_value(std::move(r));
  });
  for (int i = 0; i < 5000 && services_.front()->sleeping.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(services_.front()->sleeping.load(), 1);
  server_->Shutdown();
  auto ended = in_flight.get_future().get();
  EXPECT_FALSE(ended.ok());
  // The stream may still be open when the in-flight call ends (its handler answered as the
  // server stopped): a call sent on it then may have been handled.
  auto next = CallAsyncAndWait(transport::WriteRequest{.body = "a"});
  EXPECT_TRUE(next.status().code() == StatusCode::kUnavailable ||
              next.status().code() == StatusCode::kDeadlineExceeded)
      << next.status();
  // By now that stream has failed: a call opens a new one, which is refused.
  auto refused = CallAsyncAndWait(transport::WriteRequest{.body = "a"});
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
  auto successor = StartServer();
  client_->SetAddress(n1_, successor->advertised_address());
  auto reached = CallAsyncAndWait(transport::WriteRequest{.body = "abcde"});
  ASSERT_TRUE(reached.ok()) << reached.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(reached->body).version, 5u);
  EXPECT_EQ(callbacks.load(), 1);
  client_->Shutdown();
  successor->Shutdown();
}

}  // namespace
}  // namespace shoal::net
