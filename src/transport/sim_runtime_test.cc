#include "src/transport/sim_runtime.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
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

// Runs a fixed scenario and returns a trace of what happened, in order. `setup` runs before the
// scenario starts.
std::vector<std::string> Trace(uint64_t seed, double loss,
                               const std::function<void(SimRuntime&)>& setup = nullptr) {
  SimRuntime sim(SimOptions{.seed = seed, .min_delay = 10, .max_delay = 5000, .loss = loss});
  if (setup) setup(sim);
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

// Partitions: a cut link loses what crosses it in its direction only; the caller waits for its
// timeout, and the request's handler ran or not depending on which leg was cut.
TEST(SimRuntimeTest, ACutLinkLosesMessagesInItsDirectionOnly) {
  SimRuntime sim(SimOptions{.seed = 4, .min_delay = 10, .max_delay = 10});
  const Address node = Address::Node(NodeId(1));
  const Address client = Address::Client(1);
  auto service = std::make_shared<EchoService>(sim, 0);
  sim.Serve(node, service);
  std::vector<std::string> trace;
  sim.Spawn(client, "c", [&] {
    auto call = [&] {
      const Micros start = sim.Now();
      auto r = sim.Call(node, Get("k"), 5000);
      trace.push_back(fmt::format("{}:{}:{}", StatusCodeToString(r.status().code()),
                                  service->handled, sim.Now() - start));
    };
    sim.CutLink(client, node);  // the request leg
    EXPECT_TRUE(sim.LinkCut(client, node));
    EXPECT_FALSE(sim.LinkCut(node, client));
    call();
    sim.HealLink(client, node);
    sim.CutLink(node, client);  // the reply leg: handled, the reply lost
    call();
    sim.HealAllLinks();
    call();
  });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(trace, (std::vector<std::string>{"DEADLINE_EXCEEDED:0:5000", "DEADLINE_EXCEEDED:1:5000",
                                             "OK:2:20"}));
}

TEST(SimRuntimeTest, CutLinksIsolatesAProcessInTheChosenDirection) {
  SimRuntime sim(SimOptions{});
  const Address n1 = Address::Node(NodeId(1));
  const Address n2 = Address::Node(NodeId(2));
  const Address n3 = Address::Node(NodeId(3));
  sim.CutLinks(n1, {n1, n2, n3}, LinkDirection::kOutgoing);
  EXPECT_TRUE(sim.LinkCut(n1, n2));
  EXPECT_TRUE(sim.LinkCut(n1, n3));
  EXPECT_FALSE(sim.LinkCut(n2, n1));
  EXPECT_FALSE(sim.LinkCut(n1, n1));
  sim.CutLinks(n1, {n2}, LinkDirection::kIncoming);
  EXPECT_TRUE(sim.LinkCut(n2, n1));
  EXPECT_FALSE(sim.LinkCut(n3, n1));
  sim.HealLinks(n1, {n2, n3}, LinkDirection::kBoth);
  for (const Address& a : {n1, n2, n3}) {
    for (const Address& b : {n1, n2, n3}) EXPECT_FALSE(sim.LinkCut(a, b));
  }
}

// A link cut while a message crosses it loses the message too.
TEST(SimRuntimeTest, ALinkCutWhileTheReplyIsInFlightLosesIt) {
  SimRuntime sim(SimOptions{.seed = 2, .min_delay = 100, .max_delay = 100});
  const Address node = Address::Node(NodeId(1));
  const Address client = Address::Client(1);
  auto service = std::make_shared<EchoService>(sim, 0);
  sim.Serve(node, service);
  Status status;
  sim.Spawn(client, "c", [&] { status = sim.Call(node, Get("k"), 5000).status(); });
  sim.Spawn(Address::Client(2), "cutter", [&] {
    ASSERT_TRUE(sim.Sleep(150).ok());  // the request arrived at 100; the reply lands at 200
    sim.CutLink(node, client);
  });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(service->handled, 1);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
}

// Without partitions and clocks, and with links cut that no message crosses or clocks at rate 1,
// a seed replays exactly the run it replayed before either existed: they draw no random numbers.
TEST(SimRuntimeTest, UnusedPartitionsAndExactClocksChangeNothing) {
  const auto plain = Trace(6, 0.1);
  EXPECT_EQ(Trace(6, 0.1,
                  [](SimRuntime& sim) {
                    sim.CutLink(Address::Node(NodeId(7)), Address::Node(NodeId(8)));
                    for (uint32_t c = 0; c < 4; ++c) sim.SetClock(Address::Client(c), SimClock{});
                    sim.SetClock(Address::Node(NodeId(1)), SimClock{});
                  }),
            plain);
  // A cut that messages cross changes the run.
  EXPECT_NE(
      Trace(6, 0.1,
            [](SimRuntime& sim) { sim.CutLink(Address::Client(0), Address::Node(NodeId(1))); }),
      plain);
}

// Per-process clocks: Now, Sleep and Call timeouts run on the clock of the process a task acts
// for; message delays and RunUntil on true time.
TEST(SimRuntimeTest, EachProcessReadsItsOwnClock) {
  SimRuntime sim(SimOptions{.seed = 1, .min_delay = 10, .max_delay = 10});
  const Address slow = Address::Node(NodeId(1));
  const Address fast = Address::Node(NodeId(2));
  sim.SetClock(slow, SimClock{.rate = 0.5, .offset = 1000});
  sim.SetClock(fast, SimClock{.rate = 2.0, .offset = 0});
  // Answers with its own clock's reading, after sleeping 100 us of it.
  class ClockService : public Service {
   public:
    explicit ClockService(SimRuntime& sim) : sim_(sim) {}
    Response Handle(const Address&, const Request&) override {
      if (!sim_.Sleep(100).ok()) return Response::Error(CancelledError("stopped"));
      GetResponse out;
      out.document.primary_key = std::to_string(sim_.Now());
      return Response::Ok(out);
    }

   private:
    SimRuntime& sim_;
  };
  sim.Serve(slow, std::make_shared<ClockService>(sim));
  Micros slow_woke = -1, slow_true = -1, fast_timeout_true = -1;
  std::string slow_says;
  sim.Spawn(slow, "sleeper", [&] {
    EXPECT_EQ(sim.Now(), 1000);
    ASSERT_TRUE(sim.Sleep(1000).ok());  // 2000 us of true time
    slow_woke = sim.Now();
    slow_true = sim.TrueNow();
  });
  sim.Spawn(fast, "caller", [&] {
    // The request takes 10 us, the slow handler 100 us of its clock (200 true), the reply 10.
    auto r = sim.Call(slow, Get("k"), 1'000'000);
    ASSERT_TRUE(r.ok()) << r.status();
    slow_says = std::get<GetResponse>(r->body).document.primary_key;
    EXPECT_EQ(sim.TrueNow(), 220);
    EXPECT_EQ(sim.Now(), 440);
    EXPECT_EQ(sim.NowOf(slow), 1110);
    // A timeout of 1000 us on this clock is 500 true microseconds.
    sim.CutLink(fast, slow);
    const Micros start = sim.TrueNow();
    EXPECT_EQ(sim.Call(slow, Get("k"), 1000).status().code(), StatusCode::kDeadlineExceeded);
    fast_timeout_true = sim.TrueNow() - start;
    // A checker asks as the slow process.
    Micros as_slow = -1;
    sim.RunAs(slow, [&] { as_slow = sim.Now(); });
    EXPECT_EQ(as_slow, sim.NowOf(slow));
    EXPECT_EQ(sim.Self(), fast);
  });
  sim.RunUntil(1'000'000);
  EXPECT_EQ(slow_woke, 2000);
  EXPECT_EQ(slow_true, 2000);
  EXPECT_EQ(slow_says, "1105");  // the handler's Now is the callee's: 1000 + (10 + 200) / 2
  EXPECT_EQ(fast_timeout_true, 500);
  EXPECT_EQ(sim.Now(), sim.TrueNow());  // the driving thread reads true time
}

// Nodes spawn a task per background job (a replication send, a move step, a fan-out call):
// a finished task's thread runs the next task spawned, so threads do not pile up until the end
// (long 5-node simulations exhausted the process's memory maps), and the stale event a stopped
// task leaves behind does not wake the task its thread runs next.
TEST(SimRuntimeTest, FinishedTasksThreadsAreReused) {
  SimRuntime sim(SimOptions{.seed = 3, .min_delay = 10, .max_delay = 100});
  auto service = std::make_shared<EchoService>(sim, 10);
  sim.Serve(Address::Node(NodeId(1)), service);
  size_t most = 0;
  int answered = 0;
  sim.Spawn(Address::Client(0), "driver", [&] {
    for (int i = 0; i < 3000; ++i) {
      sim.Spawn(Address::Client(0), "job", [&sim, &answered, i] {
        auto r = sim.Call(Address::Node(NodeId(1)), Get(std::to_string(i)), 1'000'000);
        if (r.ok()) ++answered;
      });
      if (!sim.Sleep(1000).ok()) return;
      most = std::max(most, sim.TEST_tasks());
    }
  });
  // A process stopped while its task sleeps leaves a stale event behind.
  sim.Spawn(Address::Node(NodeId(2)), "sleeper", [&sim] { (void)sim.Sleep(1'000'000'000); });
  sim.Spawn(Address::Client(1), "stopper", [&sim] {
    (void)sim.Sleep(50);
    sim.Stop(Address::Node(NodeId(2)));
  });
  sim.RunUntil(10'000'000'000);
  EXPECT_EQ(answered, 3000);
  EXPECT_EQ(service->handled, 3000);
  EXPECT_LT(most, 600u);  // a thread per task ever spawned: 3000
}

}  // namespace
}  // namespace shoal::transport
