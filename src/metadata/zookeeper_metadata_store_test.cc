#include "src/metadata/zookeeper_metadata_store.h"

// The synchronous calls of the C client, for reading the znodes directly.
#define THREADED
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "src/common/log.h"
#include "src/metadata/metadata_store_conformance.h"
#include "src/metadata/zookeeper_test_server.h"

namespace shoal::metadata {
namespace {

using std::chrono::milliseconds;

// The server of this test binary, started once by the environment below.
ZooKeeperTestServer* server = nullptr;

class ServerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto started = ZooKeeperTestServer::Start();
    // Fails (never skips) when the server can not run: the tests below would prove nothing.
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    server = server_.get();
  }
  void TearDown() override {
    server = nullptr;
    server_.reset();
  }

 private:
  std::unique_ptr<ZooKeeperTestServer> server_;
};

// A fresh root per store, so tests never see each other's keys.
std::string FreshRoot() {
  static std::atomic<int> next{0};
  return fmt::format("/shoal-test-{}/{}", getpid(), next.fetch_add(1));
}

ZooKeeperMetadataOptions OptionsAt(std::string root) {
  ZooKeeperMetadataOptions options;
  options.hosts = server != nullptr ? server->hosts() : "127.0.0.1:1";
  options.root = std::move(root);
  return options;
}

std::unique_ptr<ZooKeeperMetadataStore> OpenAt(const std::string& root) {
  auto opened = ZooKeeperMetadataStore::Open(OptionsAt(root));
  EXPECT_TRUE(opened.ok()) << opened.status();
  return opened.ok() ? *std::move(opened) : nullptr;
}

INSTANTIATE_TEST_SUITE_P(ZooKeeper, MetadataStoreConformance,
                         ::testing::Values(ConformanceStore{
                             .name = "ZooKeeper",
                             .open = []() -> std::unique_ptr<MetadataStore> {
                               return OpenAt(FreshRoot());
                             }}),
                         [](const auto&) { return std::string("ZooKeeper"); });

#define ASSERT_OK(expr) SHOAL_CONFORMANCE_ASSERT_OK(expr)

TEST(ZooKeeperMetadataOptionsTest, ParsesUris) {
  auto parsed = ZooKeeperMetadataOptions::FromUri("zk://a:1,b:2/shoal/prod/");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->hosts, "a:1,b:2");
  EXPECT_EQ(parsed->root, "/shoal/prod");
  auto ensemble = ZooKeeperMetadataOptions::FromUri("zk://127.0.0.1:2181,[::1]:2182,c:65535/s");
  ASSERT_TRUE(ensemble.ok()) << ensemble.status();
  EXPECT_EQ(ensemble->hosts, "127.0.0.1:2181,[::1]:2182,c:65535");
  EXPECT_EQ(ensemble->root, "/s");
  for (const char* bad :
       {"zk://a:1", "zk://a:1/", "zk:///x", "http://a:1/x", "embedded", "zk://a/x", "zk://a:/x",
        "zk://:1/x", "zk://a:1,/x", "zk://,a:1/x", "zk://a:1,,b:2/x", "zk://a:1,b/x", "zk://a:0/x",
        "zk://a:65536/x", "zk://a:1x/x", "zk://a:-1/x"}) {
    EXPECT_EQ(ZooKeeperMetadataOptions::FromUri(bad).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(ZooKeeperMetadataStoreTest, NoServerIsUnavailable) {
  ZooKeeperMetadataOptions options = OptionsAt("/x");
  options.hosts = "127.0.0.1:1";
  options.connect_timeout = milliseconds(300);
  EXPECT_EQ(ZooKeeperMetadataStore::Open(options).status().code(), StatusCode::kUnavailable);
}

// The ZooKeeper client's own complaints (here: nothing listens) go through the process's event
// log, so that --log-format json stays one JSON object per line.
TEST(ZooKeeperMetadataStoreTest, TheClientLibraryLogsThroughTheEventLog) {
  FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  log::Configure({.min_level = log::Level::kInfo,
                  .format = log::Format::kJson,
                  .process = "coordinator",
                  .sink = sink});
  ZooKeeperMetadataOptions options = OptionsAt("/x");
  options.hosts = "127.0.0.1:1";
  options.connect_timeout = milliseconds(300);
  EXPECT_EQ(ZooKeeperMetadataStore::Open(options).status().code(), StatusCode::kUnavailable);
  log::Disable();
  std::rewind(sink);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), sink)) > 0;) text.append(buffer, n);
  std::fclose(sink);
  int events = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    EXPECT_TRUE(line.starts_with("{") && line.ends_with("}")) << line;
    if (line.find(R"("event":"zookeeper.log")") != std::string::npos) ++events;
  }
  EXPECT_GT(events, 0) << text;
}

TEST(ZooKeeperMetadataStoreTest, DataSurvivesReopenAndIsSharedBetweenClients) {
  const std::string root = FreshRoot();
  auto first = OpenAt(root);
  ASSERT_NE(first, nullptr);
  ASSERT_OK(first->Put("p", "1", kMustNotExist).status());
  ASSERT_OK(first->Put("p", "2", 1).status());
  const std::string big(kMaxValueBytes, 'b');
  ASSERT_OK(first->Put("big", big, kMustNotExist).status());
  auto session = first->OpenSession(milliseconds(10'000));
  ASSERT_TRUE(session.ok());
  ASSERT_OK(first->PutEphemeral(*session, "eph", "e", kMustNotExist).status());
  auto second = OpenAt(root);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second->Get("p"), (Versioned{.value = "2", .version = 2}));
  EXPECT_EQ(*second->Get("eph"), (Versioned{.value = "e", .version = 1}));
  first.reset();  // closes its session: the ephemeral key goes
  EXPECT_EQ(second->Get("eph").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(second->Get("big")->value, big);
  EXPECT_EQ(*second->Put("p", "3", 2), 3u);
}

// The number of chunk znodes under `root`, read with the C client directly.
int ChunkCount(const std::string& root) {
  zhandle_t* zh = zookeeper_init(server->hosts().c_str(), nullptr, 10'000, nullptr, nullptr, 0);
  if (zh == nullptr) return -1;
  String_vector children{};
  int rc = ZCONNECTIONLOSS;
  for (int i = 0; i < 500 && rc == ZCONNECTIONLOSS; ++i) {
    rc = zoo_get_children(zh, (root + "/c").c_str(), 0, &children);
    if (rc == ZCONNECTIONLOSS) std::this_thread::sleep_for(milliseconds(10));
  }
  const int count = rc == ZOK ? children.count : -1;
  if (rc == ZOK) deallocate_String_vector(&children);
  zookeeper_close(zh);
  return count;
}

// Large values are chunks; replacing or deleting them deletes their chunks, in and across commits.
TEST(ZooKeeperMetadataStoreTest, ChunksOfReplacedValuesAreDeleted) {
  const std::string root = FreshRoot();
  auto store = OpenAt(root);
  ASSERT_NE(store, nullptr);
  const std::string big(kMaxValueBytes, 'x');
  const int per_value = static_cast<int>(kMaxValueBytes / kChunkBytes);
  ASSERT_OK(store->Put("a", big, kMustNotExist).status());
  EXPECT_EQ(ChunkCount(root), per_value);
  ASSERT_OK(store->Put("a", big + "", 1).status());
  EXPECT_EQ(ChunkCount(root), per_value);
  // Replaced twice inside one commit, then small: only the last value's chunks (none) remain.
  ASSERT_OK(store->Commit(
      std::vector<MetaOp>{MetaOp::Put("a", big), MetaOp::Put("a", big), MetaOp::Put("b", big)}));
  EXPECT_EQ(ChunkCount(root), 2 * per_value);
  ASSERT_OK(store->Commit(std::vector<MetaOp>{MetaOp::Put("a", "small"), MetaOp::Delete("b")}));
  EXPECT_EQ(ChunkCount(root), 0);
  // A failed commit leaves no chunks behind.
  EXPECT_FALSE(
      store->Commit(std::vector<MetaOp>{MetaOp::Put("c", big), MetaOp::Check("a", 99)}).ok());
  EXPECT_EQ(ChunkCount(root), 0);
  EXPECT_EQ(*store->Get("a"), (Versioned{.value = "small", .version = 5}));
}

// A write by another client reaches a watcher; so does the end of another client's session.
TEST(ZooKeeperMetadataStoreTest, WatchSeesOtherClientsChanges) {
  const std::string root = FreshRoot();
  auto watching = OpenAt(root);
  auto writing = OpenAt(root);
  ASSERT_TRUE(watching != nullptr && writing != nullptr);
  std::mutex mu;
  std::vector<WatchEvent> events;
  [[maybe_unused]] const WatchId id = watching->Watch("n/", [&](const WatchEvent& event) {
    std::lock_guard lock(mu);
    events.push_back(event);
  });
  auto has = [&](const WatchEvent& want) {
    std::lock_guard lock(mu);
    return std::find(events.begin(), events.end(), want) != events.end();
  };
  auto wait_for = [&](const WatchEvent& want) {
    for (int i = 0; i < 2000 && !has(want); ++i) std::this_thread::sleep_for(milliseconds(10));
    return has(want);
  };
  ASSERT_OK(writing->Put("n/1", "up", kMustNotExist).status());
  EXPECT_TRUE(wait_for({.key = "n/1", .value = Versioned{.value = "up", .version = 1}}));
  ASSERT_OK(writing->Put("n/1", "again", 1).status());
  EXPECT_TRUE(wait_for({.key = "n/1", .value = Versioned{.value = "again", .version = 2}}));
  auto session = writing->OpenSession(milliseconds(10'000));
  ASSERT_TRUE(session.ok());
  ASSERT_OK(writing->PutEphemeral(*session, "n/live", "x", kMustNotExist).status());
  EXPECT_TRUE(wait_for({.key = "n/live", .value = Versioned{.value = "x", .version = 1}}));
  ASSERT_OK(writing->CloseSession(*session));
  EXPECT_TRUE(wait_for({.key = "n/live", .value = std::nullopt}));
}

// The environment variable that turns this binary into a client that holds an ephemeral key
// until it is killed (see main).
constexpr const char* kChildEnv = "SHOAL_ZK_TEST_HOLD_EPHEMERAL";

int RunHoldingChild(const std::string& spec) {
  // spec: "HOSTS ROOT KEY"
  char hosts[256] = {}, root[256] = {}, key[256] = {};
  if (std::sscanf(spec.c_str(), "%255s %255s %255s", hosts, root, key) != 3) return 2;
  ZooKeeperMetadataOptions options;
  options.hosts = hosts;
  options.root = root;
  auto store = ZooKeeperMetadataStore::Open(options);
  if (!store.ok()) return 3;
  auto session = (*store)->OpenSession(milliseconds(1000));
  if (!session.ok()) return 4;
  if (!(*store)->PutEphemeral(*session, key, "alive", kMustNotExist).ok()) return 5;
  std::printf("ready\n");
  std::fflush(stdout);
  while (true) pause();
}

// A client killed without closing its session: ZooKeeper expires the session after its timeout
// and deletes the client's ephemeral keys, and watchers see them go.
TEST(ZooKeeperMetadataStoreTest, SessionLossRemovesEphemeralKeys) {
  const std::string root = FreshRoot();
  auto store = OpenAt(root);
  ASSERT_NE(store, nullptr);
  std::atomic<bool> gone{false};
  [[maybe_unused]] const WatchId id = store->Watch("node/", [&](const WatchEvent& event) {
    if (event.key == "node/7" && !event.value.has_value()) gone = true;
  });
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const std::string spec = fmt::format("{} {} node/7", server->hosts(), root);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    setenv(kChildEnv, spec.c_str(), 1);
    execl("/proc/self/exe", "child", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char ready[6] = {};
  const ssize_t n = read(out[0], ready, 5);
  close(out[0]);
  const bool child_ready = n == 5 && std::string_view(ready) == "ready";
  if (child_ready) {
    EXPECT_EQ(*store->Get("node/7"), (Versioned{.value = "alive", .version = 1}));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(child_ready) << "the child client did not start";
  bool removed = false;
  for (int i = 0; i < 1500 && !removed; ++i) {
    removed = store->Get("node/7").status().code() == StatusCode::kNotFound;
    if (!removed) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(removed);
  for (int i = 0; i < 500 && !gone; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(gone);
}

// ZooKeeper paused for longer than the store's session timeout: the session expires once the
// server runs again, and the store opens a new one by itself. Reads, writes and a watch set up
// before the outage work again, without reopening the store.
TEST(ZooKeeperMetadataStoreTest, AStoreWhoseSessionExpiredOpensANewOne) {
  ZooKeeperMetadataOptions options = OptionsAt(FreshRoot());
  options.session_timeout = milliseconds(1'000);  // the server's minimum: 2 ticks of 200 ms
  options.connect_timeout = milliseconds(5'000);
  auto opened = ZooKeeperMetadataStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<ZooKeeperMetadataStore> store = *std::move(opened);
  ASSERT_OK(store->Put("k", "before", kMustNotExist).status());
  std::atomic<bool> seen{false};
  [[maybe_unused]] const WatchId id = store->Watch("k", [&](const WatchEvent& event) {
    if (event.value.has_value() && event.value->value == "other") seen = true;
  });

  server->Pause();
  std::this_thread::sleep_for(milliseconds(3'000));
  server->Resume();
  // The first calls may still meet the old session (Unavailable); then a new one serves.
  bool read = false;
  for (int i = 0; i < 300 && !read; ++i) {
    auto value = store->Get("k");
    read = value.ok() && value->value == "before";
    if (!read) std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(read) << "the store never served again after its session expired";
  ASSERT_OK(store->Put("k", "after", 1).status());
  EXPECT_EQ(*store->Get("k"), (Versioned{.value = "after", .version = 2}));

  // Another client's change reaches the watch set up before the outage.
  auto other = ZooKeeperMetadataStore::Open(options);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_OK((*other)->Put("k", "other", 2).status());
  for (int i = 0; i < 300 && !seen; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace shoal::metadata

int main(int argc, char** argv) {
  if (const char* spec = getenv(shoal::metadata::kChildEnv); spec != nullptr) {
    return shoal::metadata::RunHoldingChild(spec);
  }
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new shoal::metadata::ServerEnvironment);
  return RUN_ALL_TESTS();
}
