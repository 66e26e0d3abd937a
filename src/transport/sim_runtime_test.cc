#include "src/transport/sim_runtime.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shoal::transport {
namespace {

// Echoes a GetRequest's key back as the document's primary key, after sleeping `work` us.
class EchoService : public Service {
 public:
  EchoService(Runtime& runtime, Micros work) : runtime_(runtime), work_(work) {}
  Response Handle(const Address&, const Request& request) override {
    ++handled;
    if (!runtime_.Sleep(work_).ok()) return Response::Error(CancelledError("stopped"));
    const auto& get = std::get<GetRequest>(request);
    GetResponse out;
    out.document.primary_key = get.primary_key;
    return Response::Ok(out);
  }
  int handled = 0;

 private:
  Runtime& runtime_;
  Micros work_;
};

Request Get(std::string key) {
  GetRequest get;
  get.primary_key = std::move(key);
  return get;
}

// Runs a fixed scenario and returns a trace of what happened, in order.
std::vector<std::string> Trace(uint64_t seed, double loss) {
  SimRuntime sim(SimOptions{.seed = seed, .min_delay = 10, .max_delay = 5000, .loss = loss});
  auto service = std::make_shared<EchoService>(sim, 100);
  sim.Serve(Address::Node(NodeId(1)), service);
  std::vector<std::string> trace;
  for (uint32_t c = 0; c < 4; ++c) {
    sim.Spawn(Address::Client(c), "client", [&sim, &trace, c] {
      for (int i = 0; i < 5; ++i) {
        auto r = sim.Call(Address::Node(NodeId(1)), Get(std::to_string(c * 100 + i)), 20000);
        trace.push_back(r.ok() ? std::get<GetResponse>(r->body).document.primary_key + "@" +
                                     std::to_string(sim.Now())
                               : std::string(StatusCodeToString(r.status().code())));
      }
    });
  }
  sim.RunUntil(1'000'000'000);
  return trace;
}

TEST(SimRuntimeTest, SameSeedReplaysExactly) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    EXPECT_EQ(Trace(seed, 0.1), Trace(seed, 0.1));
  }
  EXPECT_NE(Trace(1, 0.0), Trace(2, 0.0));
}

TEST(SimRuntimeTest, DelaysReorderConcurrentCalls) {
  // With 4 clients and random delays, replies do not come back in client order every time.
  const auto trace = Trace(7, 0.0);
  ASSERT_EQ(trace.size(), 20u);
  bool reordered = false;
  for (size_t i = 1; i < 4; ++i) reordered |= trace[i].substr(0, 1) != std::to_string(i);
  EXPECT_TRUE(reordered);
}

TEST(SimRuntimeTest, SleepAdvancesSimulatedTimeOnly) {
  SimRuntime sim(SimOptions{});
  Micros woke = -1;
  sim.Spawn(Address::Client(1), "sleeper", [&] {
    ASSERT_TRUE(sim.Sleep(3'600'000'000).ok());  // one simulated hour
    woke = sim.Now();
  });
  EXPECT_FALSE(sim.RunUntil(std::numeric_limits<Micros>::max()));
  EXPECT_EQ(woke, 3'600'000'000);
}

TEST(SimRuntimeTest, LostMessagesTimeOut) {
  SimRuntime sim(SimOptions{.seed = 3, .loss = 1.0});
  sim.Serve(Address::Node(NodeId(1)), std::make_shared<EchoService>(sim, 0));
  Status status;
  sim.Spawn(Address::Client(1), "c", [&] {
    status = sim.Call(Address::Node(NodeId(1)), Get("k"), 5000).status();
    EXPECT_EQ(sim.Now(), 5000);
  });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
}

TEST(SimRuntimeTest, UnservedAddressIsUnavailable) {
  SimRuntime sim(SimOptions{});
  Status status;
  sim.Spawn(Address::Client(1), "c",
            [&] { status = sim.Call(Address::Node(NodeId(9)), Get("k"), 5000).status(); });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

TEST(SimRuntimeTest, StoppingTheCalleeMidHandlerLosesTheReply) {
  SimRuntime sim(SimOptions{.seed = 5, .min_delay = 10, .max_delay = 10});
  const Address node = Address::Node(NodeId(1));
  auto service = std::make_shared<EchoService>(sim, 1000);
  sim.Serve(node, service);
  Status status;
  sim.Spawn(Address::Client(1), "c", [&] { status = sim.Call(node, Get("k"), 100000).status(); });
  sim.Spawn(Address::Client(2), "killer", [&] {
    ASSERT_TRUE(sim.Sleep(500).ok());  // the handler is sleeping now
    sim.Stop(node);
  });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(service->handled, 1);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
}

TEST(SimRuntimeTest, StoppedProcessTasksAreCancelledAndRestartIsANewIncarnation) {
  SimRuntime sim(SimOptions{});
  const Address node = Address::Node(NodeId(1));
  sim.Serve(node, std::make_shared<EchoService>(sim, 0));
  int loops = 0;
  Status last;
  sim.Spawn(node, "background", [&] {
    while ((last = sim.Sleep(100)).ok()) ++loops;
  });
  bool new_incarnation_alive = false;
  sim.Spawn(Address::Client(1), "operator", [&] {
    ASSERT_TRUE(sim.Sleep(1050).ok());
    sim.Stop(node);
    ASSERT_TRUE(sim.Sleep(1000).ok());
    sim.Serve(node, std::make_shared<EchoService>(sim, 0));
    sim.Spawn(node, "probe", [&] { new_incarnation_alive = sim.Alive(); });
  });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(loops, 10);
  EXPECT_EQ(last.code(), StatusCode::kCancelled);
  EXPECT_TRUE(new_incarnation_alive);
}

TEST(SimRuntimeTest, FailpointAsksTheChaosHook) {
  SimRuntime sim(SimOptions{});
  const Address node = Address::Node(NodeId(1));
  sim.Serve(node, std::make_shared<EchoService>(sim, 0));
  std::vector<std::string> seen;
  sim.SetChaosHook([&](const Address& who, std::string_view name) {
    seen.push_back(who.DebugString() + ":" + std::string(name));
    return name == "crash-here";
  });
  Status first, second;
  sim.Spawn(node, "protocol", [&] {
    first = sim.Failpoint("fine");
    second = sim.Failpoint("crash-here");
  });
  sim.RunUntil(1'000'000);
  EXPECT_TRUE(first.ok());
  EXPECT_EQ(second.code(), StatusCode::kCancelled);
  EXPECT_FALSE(sim.IsAlive(node));
  EXPECT_EQ(seen, (std::vector<std::string>{"n1:fine", "n1:crash-here"}));
}

TEST(SimRuntimeTest, ShutdownCancelsEverySleeper) {
  SimRuntime sim(SimOptions{});
  int exits = 0;
  for (int i = 0; i < 3; ++i) {
    sim.Spawn(Address::Client(i), "forever", [&] {
      while (sim.Sleep(1000).ok()) {
      }
      ++exits;
    });
  }
  EXPECT_TRUE(sim.RunUntil(50'000));
  sim.Shutdown();
  EXPECT_EQ(exits, 3);
}

}  // namespace
}  // namespace shoal::transport
