#include "src/net/grpc_runtime.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "proto/shoal.pb.h"
#include "src/net/grpc_runtime_internal.h"
#include "src/net/test_echo_service.h"
#include "src/net/uri.h"

namespace shoal::net {
namespace {

using transport::Address;

// Generous: under a sanitizer on a loaded machine, a first connection can take seconds.
constexpr transport::Micros kTimeout = 30'000'000;

struct Pair {
  std::unique_ptr<GrpcRuntime> server;
  std::unique_ptr<GrpcRuntime> client;
};

// Every test runs against both server APIs.
class GrpcRuntimeTest : public ::testing::TestWithParam<GrpcServerMode> {};

INSTANTIATE_TEST_SUITE_P(ServerModes, GrpcRuntimeTest,
                         ::testing::Values(GrpcServerMode::kSync, GrpcServerMode::kCallback),
                         [](const auto& info) {
                           return info.param == GrpcServerMode::kSync ? "Sync" : "Callback";
                         });

// `pipe`: the client's CallAsync goes over a Pipe stream.
Pair StartPair(GrpcServerMode mode, size_t max_message_bytes = kDefaultMaxMessageBytes,
               bool pipe = false) {
  auto server = GrpcRuntime::Start(
      {.listen = "127.0.0.1:0", .max_message_bytes = max_message_bytes, .server_mode = mode});
  EXPECT_TRUE(server.ok()) << server.status();
  auto client = GrpcRuntime::Start({.coordinator = (*server)->advertised_address(),
                                    .max_message_bytes = max_message_bytes,
                                    .pipe = pipe});
  EXPECT_TRUE(client.ok()) << client.status();
  return Pair{std::move(*server), std::move(*client)};
}

TEST_P(GrpcRuntimeTest, CallReachesTheServiceAndReturnsItsResponse) {
  Pair p = StartPair(GetParam());
  auto service = std::make_shared<EchoService>(*p.server);
  p.server->Serve(Address::Coordinator(), service);
  auto r =
      p.client->Call(Address::Coordinator(), transport::WriteRequest{.body = "hello"}, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(r->body).version, 5u);
  EXPECT_EQ(service->last_from.load(), Address::Client(0));

  // A typed error of the callee arrives as the Response's status, not as a transport error.
  auto typed = p.client->Call(Address::Coordinator(), transport::FenceRequest{}, kTimeout);
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(transport::ClusterErrorOf(typed->status), transport::ClusterError::kNotServing);
}

TEST_P(GrpcRuntimeTest, NodesAnnounceTheirAddressAndOthersResolveIt) {
  auto coordinator = *GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
  auto node = *GrpcRuntime::Start({.listen = "127.0.0.1:0",
                                   .coordinator = coordinator->advertised_address(),
                                   .server_mode = GetParam()});
  coordinator->Serve(Address::Coordinator(), std::make_shared<EchoService>(*coordinator));
  const Address n1 = Address::Node(NodeId(1));
  node->Serve(n1, std::make_shared<EchoService>(*node));
  // The node's first request (from one of its tasks) teaches the coordinator its address.
  std::atomic<bool> done{false};
  node->Spawn(n1, "announce", [&] {
    EXPECT_TRUE(node->Call(Address::Coordinator(), transport::WriteRequest{}, kTimeout).ok());
    done = true;
  });
  while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(coordinator->AddressBook().at(n1), node->advertised_address());
  // A client that knows only the coordinator reaches the node.
  auto client = *GrpcRuntime::Start({.coordinator = coordinator->advertised_address()});
  auto r = client->Call(n1, transport::WriteRequest{.body = "abc"}, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(r->body).version, 3u);
  // An address nobody announced is unavailable.
  EXPECT_EQ(
      client->Call(Address::Node(NodeId(9)), transport::WriteRequest{}, kTimeout).status().code(),
      StatusCode::kUnavailable);
}

TEST_P(GrpcRuntimeTest, ProcessNotServedIsUnavailable) {
  Pair p = StartPair(GetParam());
  EXPECT_EQ(
      p.client->Call(Address::Coordinator(), transport::WriteRequest{}, kTimeout).status().code(),
      StatusCode::kUnavailable);
}

// A node that answers NotHandled itself is where the book says: its address is kept (a caller
// the coordinator no longer resolves for still reaches it again); one that cannot be reached is
// forgotten.
TEST_P(GrpcRuntimeTest, ANodeAnsweringNotHandledKeepsItsAddress) {
  Pair p = StartPair(GetParam());
  const Address n1 = Address::Node(NodeId(1));
  p.client->SetAddress(n1, p.server->advertised_address());
  auto r = p.client->Call(n1, transport::WriteRequest{}, kTimeout);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(p.client->AddressBook().count(n1), 1u);

  std::string gone;
  {
    auto server = *GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
    gone = server->advertised_address();
  }
  const Address n2 = Address::Node(NodeId(2));
  p.client->SetAddress(n2, gone);
  r = p.client->Call(n2, transport::WriteRequest{}, kTimeout);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(p.client->AddressBook().count(n2), 0u);
}

TEST_P(GrpcRuntimeTest, ConnectionRefusedIsUnavailable) {
  std::string address;
  {
    auto server = *GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
    address = server->advertised_address();
  }  // nobody listens there any more
  auto client = *GrpcRuntime::Start({.coordinator = address});
  auto r = client->Call(Address::Coordinator(), transport::WriteRequest{}, kTimeout);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
}

// gRPC answers UNAVAILABLE also when the connection breaks after the request left ("Socket
// closed": the server died handling it). Only a Shoal server's own refusal (NotHandled) and a
// channel that never connected (the test above, with gRPC's own words) mean "not handled";
// anything else may have been handled, so a write's outcome is unknown rather than resent.
TEST(GrpcStatusTest, UnavailableMeansNotHandledOnlyWhenNothingWasDelivered) {
  const auto code = [](const grpc::Status& status) { return FromGrpc(status, "Put").code(); };
  EXPECT_EQ(code(NotHandled("not the leader coordinator")), StatusCode::kUnavailable);
  EXPECT_EQ(code(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "failed to connect to all addresses; last error: UNKNOWN: "
                              "ipv4:127.0.0.1:1: Failed to connect to remote host")),
            StatusCode::kUnavailable);
  for (const char* broke : {"Socket closed", "Connection reset by peer", "Broken pipe", ""}) {
    EXPECT_EQ(code(grpc::Status(grpc::StatusCode::UNAVAILABLE, broke)),
              StatusCode::kDeadlineExceeded)
        << broke;
  }
  // The details mark a refusal only on UNAVAILABLE.
  const grpc::Status aborted(grpc::StatusCode::ABORTED, "stopped", NotHandled("x").error_details());
  EXPECT_FALSE(CertainlyNotHandled(aborted));
}

TEST_P(GrpcRuntimeTest, SlowHandlerIsDeadlineExceeded) {
  Pair p = StartPair(GetParam());
  p.server->Serve(Address::Coordinator(), std::make_shared<EchoService>(*p.server));
  const auto start = std::chrono::steady_clock::now();
  auto r = p.client->Call(Address::Coordinator(), transport::GetRequest{}, 100'000);
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_P(GrpcRuntimeTest, RequestOfExactlyTheLimitPassesAndOneByteMoreIsRejected) {
  constexpr size_t kLimit = 64 * 1024;
  Pair p = StartPair(GetParam(), kLimit);
  p.server->Serve(Address::Coordinator(), std::make_shared<EchoService>(*p.server));
  // Find the body size whose request is exactly kLimit bytes on the wire: the envelope adds a
  // few bytes of framing that depend on the body's length.
  size_t body = kLimit - 64;
  while (true) {
    auto r = p.client->Call(Address::Coordinator(),
                            transport::WriteRequest{.body = std::string(body + 1, 'b')}, kTimeout);
    if (!r.ok()) break;
    ++body;
  }
  // `body` passes and `body + 1` does not: the boundary is exactly the limit.
  auto at_limit = p.client->Call(Address::Coordinator(),
                                 transport::WriteRequest{.body = std::string(body, 'b')}, kTimeout);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  auto over = p.client->Call(Address::Coordinator(),
                             transport::WriteRequest{.body = std::string(body + 1, 'b')}, kTimeout);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(over.status().message())
                .find(fmt::format("{} bytes exceeds the limit of {} bytes", kLimit + 1, kLimit)),
            std::string::npos)
      << over.status();
}

TEST_P(GrpcRuntimeTest, OversizedResponseIsACleanError) {
  constexpr size_t kLimit = 64 * 1024;
  Pair p = StartPair(GetParam(), kLimit);
  p.server->Serve(Address::Coordinator(), std::make_shared<EchoService>(*p.server));
  auto r = p.client->Call(Address::Coordinator(),
                          transport::WriteRequest{.primary_key = "big-reply",
                                                  .body = std::string(kLimit / 2 + 16, 'b')},
                          kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status.code(), StatusCode::kResourceExhausted) << r->status;
}

TEST_P(GrpcRuntimeTest, StopMakesTheProcessUnavailable) {
  Pair p = StartPair(GetParam());
  p.server->Serve(Address::Coordinator(), std::make_shared<EchoService>(*p.server));
  ASSERT_TRUE(p.client->Call(Address::Coordinator(), transport::WriteRequest{}, kTimeout).ok());
  p.server->Stop(Address::Coordinator());
  EXPECT_EQ(
      p.client->Call(Address::Coordinator(), transport::WriteRequest{}, kTimeout).status().code(),
      StatusCode::kUnavailable);
}

TEST_P(GrpcRuntimeTest, BlockedHandlersDoNotDelayOtherCalls) {
  constexpr int kSlow = 8;
  Pair p = StartPair(GetParam());
  auto service = std::make_shared<EchoService>(*p.server);
  p.server->Serve(Address::Coordinator(), service);
  std::vector<std::thread> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.emplace_back([&] {
      EXPECT_TRUE(p.client->Call(Address::Coordinator(), transport::GetRequest{}, 60'000'000).ok());
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (service->sleeping.load() < kSlow && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Every handler is blocked at once, and another call is still answered meanwhile.
  EXPECT_EQ(service->sleeping.load(), kSlow);
  auto r = p.client->Call(Address::Coordinator(), transport::WriteRequest{.body = "x"}, 60'000'000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(service->sleeping.load(), 0);  // answered before the sleepers woke
  for (auto& t : slow) t.join();
}

TEST_P(GrpcRuntimeTest, AdminIsUnimplementedWithoutAHandlerAndAnsweredWithOne) {
  Pair p = StartPair(GetParam());
  EXPECT_EQ(p.client->Admin(wire::AdminRequest(), kTimeout).status().code(),
            StatusCode::kUnimplemented);
  p.server->SetAdminHandler(
      [](const wire::AdminRequest&, wire::AdminResponse* out) { out->set_splits(7); });
  auto r = p.client->Admin(wire::AdminRequest(), kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->splits(), 7u);
}

// Admin and Resolve calls count towards the calls in flight (docs/limits.md): with one call
// allowed, a second one while an Admin call is held is refused at once, and the server serves
// again once the first is answered.
TEST_P(GrpcRuntimeTest, AdminAndResolveCallsCountTowardsTheCallLimit) {
  auto server = GrpcRuntime::Start({.listen = "127.0.0.1:0",
                                    .server_mode = GetParam(),
                                    .call_limits = {.max_calls = 1, .max_calls_per_address = 1}});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = GrpcRuntime::Start({.coordinator = (*server)->advertised_address()});
  ASSERT_TRUE(client.ok()) << client.status();
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  (*server)->SetAdminHandler([&](const wire::AdminRequest&, wire::AdminResponse* out) {
    entered = true;
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    out->set_splits(1);
  });
  std::thread held([&] { EXPECT_TRUE((*client)->Admin(wire::AdminRequest(), kTimeout).ok()); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!entered.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(entered.load());
  auto refused =
      (*client)->AdminAt((*server)->advertised_address(), wire::AdminRequest(), kTimeout);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("docs/limits.md"), std::string_view::npos)
      << refused.status();
  release = true;
  held.join();
  // The callback server gives the slot back just after the answer leaves: allow it a moment.
  auto after = (*client)->AdminAt((*server)->advertised_address(), wire::AdminRequest(), kTimeout);
  for (int attempt = 0; attempt < 1000 && !after.ok(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    after = (*client)->AdminAt((*server)->advertised_address(), wire::AdminRequest(), kTimeout);
  }
  EXPECT_TRUE(after.ok()) << after.status();
}

// A server whose failpoints may be set over the network (or not), and a client.
Pair StartFailpointPair(GrpcServerMode mode, bool remote_failpoints) {
  auto server = GrpcRuntime::Start(
      {.listen = "127.0.0.1:0", .server_mode = mode, .remote_failpoints = remote_failpoints});
  EXPECT_TRUE(server.ok()) << server.status();
  auto client = GrpcRuntime::Start({.coordinator = (*server)->advertised_address()});
  EXPECT_TRUE(client.ok()) << client.status();
  return Pair{std::move(*server), std::move(*client)};
}

StatusOr<wire::AdminResponse> SetFailpointsAt(Pair& p, const std::string& spec) {
  wire::AdminRequest request;
  request.mutable_set_failpoints()->set_spec(spec);
  return p.client->AdminAt(p.server->advertised_address(), request, kTimeout);
}

TEST_P(GrpcRuntimeTest, FailpointsAreRefusedOverTheNetworkWithoutRemoteFailpoints) {
  Pair p = StartFailpointPair(GetParam(), /*remote_failpoints=*/false);
  for (const std::string spec : {"test.pause=pause:600000", ""}) {
    auto r = SetFailpointsAt(p, spec);
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status();
    EXPECT_EQ(MessageOf(r.status()), kRemoteFailpointsOff);
  }
  // Nothing was armed: a task passes the point at once.
  p.server->Serve(Address::Node(NodeId(1)), std::make_shared<EchoService>(*p.server));
  std::atomic<bool> done = false;
  std::atomic<int> code = -1;
  p.server->Spawn(Address::Node(NodeId(1)), "free", [&] {
    code = static_cast<int>(p.server->Failpoint("test.pause").code());
    done = true;
  });
  for (int i = 0; i < 3000 && !done.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(done.load());
  EXPECT_EQ(code.load(), static_cast<int>(StatusCode::kOk));
}

TEST_P(GrpcRuntimeTest, FailpointsAreReplacedByAnAdminCallToTheProcess) {
  Pair p = StartFailpointPair(GetParam(), /*remote_failpoints=*/true);
  auto set = [&](const std::string& spec) { return SetFailpointsAt(p, spec); };
  // Answered by the process itself: no coordinator admin handler is needed.
  auto r = set("test.pause=pause:600000");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->failpoints(), "test.pause=pause:600000");
  // Malformed: a clean error, and the active set stays.
  EXPECT_EQ(set("test.pause=explode").status().code(), StatusCode::kInvalidArgument);

  // The pause holds a task of the process until the process stops.
  p.server->Serve(Address::Node(NodeId(1)), std::make_shared<EchoService>(*p.server));
  std::atomic<bool> done = false;
  std::atomic<int> code = -1;
  p.server->Spawn(Address::Node(NodeId(1)), "paused", [&] {
    code = static_cast<int>(p.server->Failpoint("test.pause").code());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done.load()) << "the failpoint set by the admin call did not pause";
  p.server->Stop(Address::Node(NodeId(1)));
  for (int i = 0; i < 3000 && !done.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(done.load());
  EXPECT_EQ(code.load(), static_cast<int>(StatusCode::kCancelled));

  // "" switches them off: the same point no longer pauses.
  r = set("");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->failpoints(), "");
  p.server->Serve(Address::Node(NodeId(2)), std::make_shared<EchoService>(*p.server));
  done = false;
  p.server->Spawn(Address::Node(NodeId(2)), "free", [&] {
    code = static_cast<int>(p.server->Failpoint("test.pause").code());
    done = true;
  });
  for (int i = 0; i < 3000 && !done.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(done.load());
  EXPECT_EQ(code.load(), static_cast<int>(StatusCode::kOk));
}

// CallAsync to a node, as a unary call on gRPC's callback API or as a message of the node's
// Pipe stream (the bool), with Call's results and errors, against both server APIs.
class AsyncCallTest : public ::testing::TestWithParam<std::tuple<GrpcServerMode, bool>> {
 protected:
  Pair Start(size_t max_message_bytes = kDefaultMaxMessageBytes) {
    return StartPair(std::get<0>(GetParam()), max_message_bytes, std::get<1>(GetParam()));
  }
};

INSTANTIATE_TEST_SUITE_P(
    ServerModesAndPipe, AsyncCallTest,
    ::testing::Combine(::testing::Values(GrpcServerMode::kSync, GrpcServerMode::kCallback),
                       ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == GrpcServerMode::kSync ? "Sync" : "Callback") +
             (std::get<1>(info.param) ? "Pipe" : "Unary");
    });

// CallAsync to a node, and wait for its result.
StatusOr<transport::Response> CallAsyncAndWait(GrpcRuntime& runtime, const Address& to,
                                               transport::Request request,
                                               transport::Micros timeout) {
  auto promise = std::make_shared<std::promise<StatusOr<transport::Response>>>();
  auto future = promise->get_future();
  runtime.CallAsync(to, std::move(request), timeout, [promise](StatusOr<transport::Response> r) {
    promise->set_value(std::move(r));
  });
  return future.get();
}

TEST_P(AsyncCallTest, CallAsyncToANodeAnswersLikeCall) {
  Pair p = Start(/*max_message_bytes=*/64 * 1024);
  const Address n1 = Address::Node(NodeId(1));
  p.server->Serve(n1, std::make_shared<EchoService>(*p.server));
  p.client->SetAddress(n1, p.server->advertised_address());
  auto r = CallAsyncAndWait(*p.client, n1, transport::WriteRequest{.body = "abc"}, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(r->body).version, 3u);
  // The handler's own error is the response's, as with Call.
  r = CallAsyncAndWait(*p.client, n1, transport::ScanRequest{}, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(transport::ClusterErrorOf(r->status), transport::ClusterError::kNotServing);
  // Too large: refused before anything is sent.
  r = CallAsyncAndWait(*p.client, n1, transport::WriteRequest{.body = std::string(65 * 1024, 'x')},
                       kTimeout);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  // A node nobody knows the address of: certainly not handled.
  r = CallAsyncAndWait(*p.client, Address::Node(NodeId(9)), transport::WriteRequest{}, kTimeout);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  // Slower than the deadline: may have been handled.
  r = CallAsyncAndWait(*p.client, n1, transport::GetRequest{}, 100'000);
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
}

TEST_P(AsyncCallTest, ShutdownEndsAsyncCallsInFlightAndWaitsForTheirCallbacks) {
  Pair p = Start();
  const Address n1 = Address::Node(NodeId(1));
  auto service = std::make_shared<EchoService>(*p.server);
  p.server->Serve(n1, service);
  p.client->SetAddress(n1, p.server->advertised_address());
  std::atomic<int> answered{0};
  std::atomic<int> code{-1};
  // Each Get sleeps 2 s at the server, far within the 60 s deadline.
  for (int i = 0; i < 3; ++i) {
    p.client->CallAsync(n1, transport::GetRequest{}, 60'000'000,
                        [&](StatusOr<transport::Response> r) {
                          code = static_cast<int>(r.status().code());
                          ++answered;
                        });
  }
  for (int i = 0; i < 3000 && service->sleeping.load() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(service->sleeping.load(), 3);
  const auto start = std::chrono::steady_clock::now();
  p.client->Shutdown();
  EXPECT_EQ(answered.load(), 3);  // every callback ran before Shutdown returned
  EXPECT_EQ(code.load(), static_cast<int>(StatusCode::kCancelled));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // After Shutdown: kCancelled at once.
  auto r = CallAsyncAndWait(*p.client, n1, transport::WriteRequest{}, kTimeout);
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status();
}

TEST(GrpcServerModeTest, ParsesTheTwoModesAndRejectsOthers) {
  EXPECT_EQ(*ParseGrpcServerMode("sync"), GrpcServerMode::kSync);
  EXPECT_EQ(*ParseGrpcServerMode("callback"), GrpcServerMode::kCallback);
  EXPECT_EQ(ParseGrpcServerMode("async").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGrpcServerMode("").status().code(), StatusCode::kInvalidArgument);
}

// A list of coordinators: calls go on past a dead address and a standby to the leader, and the
// leader stays in use afterwards.
TEST_P(GrpcRuntimeTest, CoordinatorListSkipsDeadAndStandbyCoordinators) {
  std::string dead;
  {
    auto server = *GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
    dead = server->advertised_address();
  }
  auto standby = *GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
  standby->SetStandby(true, "the-leader:1");
  auto leader = *GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
  auto service = std::make_shared<EchoService>(*leader);
  leader->Serve(Address::Coordinator(), service);
  auto client = *GrpcRuntime::Start(
      {.coordinator = fmt::format("{},{},{}", dead, standby->advertised_address(),
                                  leader->advertised_address())});
  // The first call may also meet a connection still being set up (kUnavailable, which callers
  // retry): try until it lands.
  StatusOr<transport::Response> first = UnavailableError("not tried");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!first.ok() && std::chrono::steady_clock::now() < until) {
    first = client->Call(Address::Coordinator(), transport::WriteRequest{.body = "ab"}, 5'000'000);
  }
  ASSERT_TRUE(first.ok()) << first.status();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(client->AddressBook().at(Address::Coordinator()), leader->advertised_address());
    auto r = client->Call(Address::Coordinator(), transport::WriteRequest{.body = "ab"}, 5'000'000);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(std::get<transport::WriteResponse>(r->body).version, 2u);
  }
  // The standby's Resolve and Admin say who leads.
  auto only_standby = *GrpcRuntime::Start({.coordinator = standby->advertised_address()});
  auto admin = only_standby->Admin(wire::AdminRequest{}, 1'000'000);
  EXPECT_EQ(admin.status().code(), StatusCode::kUnavailable) << admin.status();
  EXPECT_NE(MessageOf(admin.status()).find("the-leader:1"), std::string_view::npos)
      << admin.status();
  EXPECT_EQ(only_standby->Call(Address::Node(NodeId(1)), transport::WriteRequest{}, 1'000'000)
                .status()
                .code(),
            StatusCode::kUnavailable);
  // Every coordinator down or standing by: kUnavailable, after one try of each.
  auto stranded = *GrpcRuntime::Start(
      {.coordinator = fmt::format("{},{}", dead, standby->advertised_address())});
  EXPECT_EQ(
      stranded->Call(Address::Coordinator(), transport::WriteRequest{}, 5'000'000).status().code(),
      StatusCode::kUnavailable);
  // A bad list is refused.
  EXPECT_EQ(GrpcRuntime::Start({.coordinator = dead + ","}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CoordinatorsOfTest, ChecksEveryAddress) {
  EXPECT_EQ(CoordinatorsOf("shoal://a:1,b:65535").value_or(std::string()), "a:1,b:65535");
  EXPECT_EQ(CoordinatorsOf("a:1").value_or(std::string()), "a:1");
  EXPECT_EQ(CoordinatorsOf("shoal://a:1,").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CoordinatorsOf("shoal://a:1,b").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CoordinatorsOf("shoal://a:1,b:65536").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CoordinatorsOf("shoal://,a:1").status().code(), StatusCode::kInvalidArgument);
  const Status http = CoordinatorsOf("http://127.0.0.1:7400").status();
  EXPECT_EQ(http.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(http.message().find("expected shoal://HOST:PORT"), std::string_view::npos) << http;
}

}  // namespace
}  // namespace shoal::net
