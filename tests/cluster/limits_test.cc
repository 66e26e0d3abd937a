// Limits at every entry of a real cluster (docs/limits.md): for each limit a request at the
// limit is accepted and one past it is refused with the documented code and a message naming the
// limit, nothing is changed (read back), and the node serves another client right after. Where
// the client library refuses first, the same request is also sent raw (a runtime of the test,
// past the library's checks) so that the server's own check is seen. Errors name the collection
// as the user typed it, through the library and through the CLI.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "proto/shoal.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/transport/messages.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

using transport::Address;

constexpr size_t kKeyLimit = 8 << 10;        // storage::DocumentLimits::max_primary_key_bytes
constexpr size_t kBodyLimit = 1 << 20;       // storage::DocumentLimits::max_body_bytes
constexpr size_t kDepthLimit = 64;           // storage::DocumentLimits::max_depth
constexpr size_t kNameLimit = 256;           // storage::kMaxCollectionNameBytes
constexpr uint32_t kStreamDocuments = 1000;  // net::kDefaultStreamDocuments
constexpr size_t kUserLimit = 1000;          // security::kMaxUsers
constexpr transport::Micros kTimeout = 10'000'000;

// A JSON object of exactly `bytes` bytes.
std::string BodyOf(size_t bytes) { return R"({"v":")" + std::string(bytes - 8, 'x') + R"("})"; }

// A JSON object nesting `depth` objects.
std::string Nested(size_t depth) {
  std::string body = "1";
  for (size_t i = 0; i < depth; ++i) body = R"({"a":)" + body + "}";
  return body;
}

// `status` is a refusal with `code` whose message names the limit ("the limit is N" or the
// documented phrase) and the table.
void ExpectRefused(const Status& status, StatusCode code, const std::string& names,
                   const std::string& what) {
  EXPECT_EQ(status.code(), code) << what << ": " << status;
  EXPECT_NE(MessageOf(status).find(names), std::string_view::npos) << what << ": " << status;
  EXPECT_NE(MessageOf(status).find("docs/limits.md"), std::string_view::npos)
      << what << ": " << status;
}

// A cluster of a coordinator and one node, shared by the tests of the suite.
class LimitsTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new ProcessCluster(ShoalBinary());
    Status started = cluster_->StartCoordinator(1, 4);
    if (started.ok()) started = cluster_->StartNode(1);
    if (started.ok()) started = cluster_->WaitServing(30);
    ASSERT_TRUE(started.ok()) << started << cluster_->LogTails(20);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    auto raw = cluster_->ClientRuntime();
    ASSERT_TRUE(raw.ok()) << raw.status();
    raw_ = std::move(*raw);
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    ExpectServesAnotherClient();
  }

  Collection Open(const std::string& name) {
    auto c = db_->CreateCollection(name);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  // The documents of `c`, counted by a query.
  static size_t Count(Collection& c) {
    size_t n = 0;
    Status s = c.QueryStream({}, [&n](const Document&) {
      ++n;
      return OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
    return n;
  }

  // The current epoch and the id of collection `name`, for raw requests.
  void Resolve(const std::string& name, MapEpoch* epoch, CollectionId* id) {
    auto state = cluster_->State();
    ASSERT_TRUE(state.ok()) << state.status();
    *epoch = state->map->epoch();
    for (const auto& spec : state->collections) {
      if (spec.name == name) *id = spec.id;
    }
  }

  // The node's answer to a raw request (the transport's error if there is none).
  Status RawCall(const Address& to, transport::Request request,
                 transport::Response* answer = nullptr) {
    auto response = raw_->Call(to, std::move(request), kTimeout);
    if (!response.ok()) return response.status();
    if (answer != nullptr) *answer = *response;
    return response->status;
  }

  // A new client writes and reads back.
  static void ExpectServesAnotherClient() {
    if (cluster_ == nullptr) return;
    auto other = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(other.ok()) << other.status();
    auto c = (*other)->CreateCollection("other");
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_TRUE(c->Upsert("alive", R"({"ok":true})").ok());
    auto got = c->Get("alive");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->json, R"({"ok":true})");
  }

  static ProcessCluster* cluster_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<net::GrpcRuntime> raw_;
};

ProcessCluster* LimitsTest::cluster_ = nullptr;

TEST_F(LimitsTest, KeyBytes) {
  Collection c = Open("keys");
  const std::string at(kKeyLimit, 'k');
  const std::string past(kKeyLimit + 1, 'k');
  ASSERT_TRUE(c.Upsert(at, "{}").ok());
  const std::string names =
      fmt::format("key is {} bytes; the limit is {}", kKeyLimit + 1, kKeyLimit);
  ExpectRefused(c.Upsert(past, "{}").status(), StatusCode::kResourceExhausted, names, "Upsert");
  ExpectRefused(c.Get(past).status(), StatusCode::kResourceExhausted, names, "Get");
  ExpectRefused(c.Upsert("", "{}").status(), StatusCode::kInvalidArgument, "key is empty",
                "empty key");
  // The library sends keys as they are: the node's check refused them. Raw, the same.
  MapEpoch epoch{};
  CollectionId id{};
  Resolve("keys", &epoch, &id);
  ExpectRefused(
      RawCall(Address::Node(NodeId(1)), transport::WriteRequest{.epoch = epoch,
                                                                .op = transport::WriteOp::kUpsert,
                                                                .collection = id,
                                                                .primary_key = past,
                                                                .body = "{}",
                                                                .expected_version = 0,
                                                                .via_move = std::nullopt}),
      StatusCode::kResourceExhausted, names, "raw Write");
  EXPECT_TRUE(c.Get(at).ok());
  EXPECT_EQ(Count(c), 1u);
}

TEST_F(LimitsTest, DocumentBytesAndDepth) {
  Collection c = Open("bodies");
  ASSERT_TRUE(c.Upsert("big", BodyOf(kBodyLimit)).ok());
  ExpectRefused(
      c.Upsert("bigger", BodyOf(kBodyLimit + 1)).status(), StatusCode::kResourceExhausted,
      fmt::format("document body is {} bytes; the limit is {}", kBodyLimit + 1, kBodyLimit),
      "Upsert");
  ExpectRefused(c.Update("big", BodyOf(kBodyLimit + 1)).status(), StatusCode::kResourceExhausted,
                "the limit is 1048576", "Update");
  ASSERT_TRUE(c.Upsert("deep", Nested(kDepthLimit)).ok());
  ExpectRefused(c.Upsert("deeper", Nested(kDepthLimit + 1)).status(), StatusCode::kInvalidArgument,
                "nests deeper than the limit of 64", "depth");
  auto big = c.Get("big");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->json.size(), kBodyLimit);
  EXPECT_EQ(Count(c), 2u);
}

TEST_F(LimitsTest, BatchWritesAndBytes) {
  Collection c = Open("batches");
  std::vector<BatchWrite> writes;
  for (size_t i = 0; i < kMaxBatchWrites; ++i) {
    writes.push_back({.op = BatchOp::kUpsert, .key = fmt::format("w{}", i), .json = "{}"});
  }
  auto accepted = c.Batch(writes);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  for (const auto& result : *accepted) ASSERT_TRUE(result.ok()) << result.status();
  writes.push_back({.op = BatchOp::kUpsert, .key = "one-more", .json = "{}"});
  const std::string count_names = "a batch of 1001 writes; the limit is 1000";
  ExpectRefused(c.Batch(writes).status(), StatusCode::kResourceExhausted, count_names,
                "client Batch");

  // Exactly kMaxBatchBytes of keys and bodies: 16 bodies of 10^6 bytes and one to fill.
  std::vector<BatchWrite> heavy;
  size_t bytes = 0;
  for (int i = 0; i < 17; ++i) {
    const std::string key = fmt::format("b{:02}", i);
    const size_t body = i < 16 ? 1'000'000 : kMaxBatchBytes - bytes - key.size();
    heavy.push_back({.op = BatchOp::kUpsert, .key = key, .json = BodyOf(body)});
    bytes += key.size() + body;
  }
  ASSERT_EQ(bytes, kMaxBatchBytes);
  auto heavy_ok = c.Batch(heavy);
  ASSERT_TRUE(heavy_ok.ok()) << heavy_ok.status();
  for (const auto& result : *heavy_ok) ASSERT_TRUE(result.ok()) << result.status();
  heavy.back().json = BodyOf(heavy.back().json.size() + 1);
  heavy.back().key = "b-past";
  const std::string bytes_names =
      fmt::format("a batch of {} bytes of keys and bodies; the limit is {}", kMaxBatchBytes + 4,
                  kMaxBatchBytes);
  ExpectRefused(c.Batch(heavy).status(), StatusCode::kResourceExhausted, bytes_names,
                "client Batch bytes");

  // The node's own check, past the library's.
  MapEpoch epoch{};
  CollectionId id{};
  Resolve("batches", &epoch, &id);
  const auto to_raw = [&](const std::vector<BatchWrite>& batch) {
    transport::BatchWriteRequest request{.epoch = epoch, .writes = {}};
    for (const auto& w : batch) {
      request.writes.push_back({.epoch = epoch,
                                .op = transport::WriteOp::kUpsert,
                                .collection = id,
                                .primary_key = w.key,
                                .body = w.json,
                                .expected_version = 0,
                                .via_move = std::nullopt});
    }
    return request;
  };
  ExpectRefused(RawCall(Address::Node(NodeId(1)), to_raw(writes)), StatusCode::kResourceExhausted,
                count_names, "raw BatchWrite");
  ExpectRefused(RawCall(Address::Node(NodeId(1)), to_raw(heavy)), StatusCode::kResourceExhausted,
                bytes_names, "raw BatchWrite bytes");

  // Batch gets: the client splits them itself, so only raw requests reach the limit.
  transport::BatchGetRequest gets{.epoch = epoch, .gets = {}};
  for (size_t i = 0; i < transport::kMaxBatchGets; ++i) {
    gets.gets.push_back({.epoch = epoch, .collection = id, .primary_key = fmt::format("w{}", i)});
  }
  transport::Response answer;
  ASSERT_TRUE(RawCall(Address::Node(NodeId(1)), gets, &answer).ok());
  gets.gets.push_back({.epoch = epoch, .collection = id, .primary_key = "w0"});
  ExpectRefused(RawCall(Address::Node(NodeId(1)), gets), StatusCode::kResourceExhausted,
                "a batch of 33 gets; the limit is 32", "raw BatchGet");

  EXPECT_FALSE(c.Get("one-more").ok());
  EXPECT_FALSE(c.Get("b-past").ok());
  EXPECT_EQ(Count(c), kMaxBatchWrites + 17);
}

TEST_F(LimitsTest, CollectionNames) {
  const std::string at(kNameLimit, 'n');
  const std::string past(kNameLimit + 1, 'n');
  ASSERT_TRUE(db_->CreateCollection(at).ok());
  const std::string names = "a name has 1 to 256 bytes";
  for (const std::string& bad : {past, std::string("a b"), std::string("-x"), std::string()}) {
    ExpectRefused(db_->GetCollection(bad).status(), StatusCode::kInvalidArgument, names,
                  "client " + bad.substr(0, 8));
    // The coordinator's own check.
    ExpectRefused(RawCall(Address::Coordinator(), transport::CreateCollectionRequest{.name = bad}),
                  StatusCode::kInvalidArgument, names, "raw CreateCollection");
  }
  auto state = cluster_->State();
  ASSERT_TRUE(state.ok()) << state.status();
  for (const auto& spec : state->collections) {
    EXPECT_LE(spec.name.size(), kNameLimit);
    EXPECT_NE(spec.name, "a b");
  }
}

// Users per cluster, over the wire: the coordinator takes users up to the limit (the first
// `admin` counts) and refuses one more, naming the limit; the table is as it was.
TEST_F(LimitsTest, UsersPerCluster) {
  wire::AdminRequest list;
  list.mutable_list_users();
  auto listed = raw_->Admin(list, kTimeout);
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (size_t i = listed->users_size(); i < kUserLimit; ++i) {
    wire::AdminRequest add;
    add.mutable_add_user()->set_name(fmt::format("limit-user-{}", i));
    add.mutable_add_user()->set_role("read");
    auto added = raw_->Admin(add, kTimeout);
    ASSERT_TRUE(added.ok()) << i << ": " << added.status();
  }
  wire::AdminRequest past;
  past.mutable_add_user()->set_name("one-too-many");
  past.mutable_add_user()->set_role("read");
  ExpectRefused(raw_->Admin(past, kTimeout).status(), StatusCode::kResourceExhausted,
                fmt::format("the cluster has {} users; the limit is {}", kUserLimit, kUserLimit),
                "AddUser");
  auto after = raw_->Admin(list, kTimeout);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(static_cast<size_t>(after->users_size()), kUserLimit);
  for (const auto& user : after->users()) EXPECT_NE(user.name(), "one-too-many");
}

TEST_F(LimitsTest, DocumentsPerStreamedPage) {
  Collection c = Open("pages");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.Upsert(fmt::format("p{}", i), "{}").ok());
  size_t seen = 0;
  const auto count = [&seen](const Document&) {
    ++seen;
    return OkStatus();
  };
  ASSERT_TRUE(c.QueryStream({.filter = {}, .limit = kStreamDocuments, .cursor = ""}, count).ok());
  EXPECT_EQ(seen, 3u);
  ExpectRefused(c.QueryStream({.filter = {}, .limit = kStreamDocuments + 1, .cursor = ""}, count),
                StatusCode::kInvalidArgument,
                "1001 documents per streamed message; the limit is 1000", "QueryStream");
}

TEST_F(LimitsTest, MessageBytes) {
  Collection c = Open("messages");
  // Within the message limit the request reaches the node, whose body limit answers.
  ExpectRefused(c.Upsert("m", BodyOf(32 << 20)).status(), StatusCode::kResourceExhausted,
                "document body is", "a 32 MiB body");
  // Past it, the client's runtime refuses before sending. (gRPC's own bound at the server is 64
  // bytes higher, for a pipe message's framing: this body is past both.)
  const std::string huge = BodyOf(net::kDefaultMaxMessageBytes + 1024);
  ExpectRefused(c.Upsert("m", huge).status(), StatusCode::kResourceExhausted,
                "exceeds the limit of 67108864 bytes", "client");
  // A client that skips that check: the node's gRPC refuses the message.
  auto loose = net::GrpcRuntime::Start({.coordinator = cluster_->coordinators(),
                                        .max_message_bytes = 2 * net::kDefaultMaxMessageBytes,
                                        .security = cluster_->client_security()});
  ASSERT_TRUE(loose.ok()) << loose.status();
  MapEpoch epoch{};
  CollectionId id{};
  Resolve("messages", &epoch, &id);
  auto refused = (*loose)->Call(Address::Node(NodeId(1)),
                                transport::WriteRequest{.epoch = epoch,
                                                        .op = transport::WriteOp::kUpsert,
                                                        .collection = id,
                                                        .primary_key = "m",
                                                        .body = huge,
                                                        .expected_version = 0,
                                                        .via_move = std::nullopt},
                                kTimeout);
  const Status status = refused.ok() ? refused->status : refused.status();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
  EXPECT_NE(MessageOf(status).find("arger than max"), std::string_view::npos) << status;
  (*loose)->Shutdown();
  EXPECT_EQ(Count(c), 0u);
}

TEST_F(LimitsTest, ErrorsNameTheCollectionAsTyped) {
  Collection c = Open("users");
  ASSERT_TRUE(c.Upsert("alice", "{}").ok());
  const Status missing = c.Get("x").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(MessageOf(missing).find(R"(collection "users" key "x": nothing stored)"),
            std::string_view::npos)
      << missing;
  EXPECT_EQ(MessageOf(missing).find("pk="), std::string_view::npos) << missing;
  std::string out;
  std::string err;
  const std::vector<std::string> security =
      cluster_->connect_options().insecure
          ? std::vector<std::string>{"--insecure"}
          : std::vector<std::string>{"--certs-dir", cluster_->certs_dir()};
  EXPECT_EQ(cluster_->RunCliWith({"get", "nosuch", "x"}, security, &out, &err), 1);
  EXPECT_NE(err.find(R"(error: NOT_FOUND (UNKNOWN_COLLECTION): no collection named "nosuch")"),
            std::string::npos)
      << err;
  EXPECT_EQ(cluster_->RunCliWith({"get", "users", "x"}, security, &out, &err), 1);
  EXPECT_NE(err.find(R"(error: NOT_FOUND: collection "users" key "x": nothing stored)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("pk="), std::string::npos) << err;
  EXPECT_EQ(cluster_->RunCliWith({"put", "users", std::string(kKeyLimit + 1, 'k'), "{}"}, security,
                                 &out, &err),
            1);
  EXPECT_NE(err.find("error: RESOURCE_EXHAUSTED (TOO_LARGE): key is 8193 bytes; the limit is 8192 "
                     "(docs/limits.md)"),
            std::string::npos)
      << err;
}

// Calls in flight at one node, per client address and in all: a node whose writes pause holds
// them; one call more, unary or on a pipe stream, is refused at once, and the node serves again
// once they end.
class CallLimitsTest : public testing::Test {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
  }

  void Check(const std::vector<std::string>& flags, const std::string& names) {
    constexpr int kLimit = 4;
    cluster_->SetNodeArgs(1, flags);
    if (cluster_->Running(1)) cluster_->Kill(1);
    if (!cluster_->Running(kCoordinator)) {
      ASSERT_TRUE(cluster_->StartCoordinator(1, 4).ok());
    }
    ASSERT_TRUE(cluster_->StartNode(1, "node.after_write=pause:1500").ok());
    ASSERT_TRUE(cluster_->WaitServing(30).ok());
    auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(db.ok()) << db.status();
    auto c = (*db)->CreateCollection("calls");
    ASSERT_TRUE(c.ok()) << c.status();
    MapEpoch epoch{};
    CollectionId id{};
    auto state = cluster_->State();
    ASSERT_TRUE(state.ok()) << state.status();
    epoch = state->map->epoch();
    for (const auto& spec : state->collections) {
      if (spec.name == "calls") id = spec.id;
    }
    auto raw = cluster_->ClientRuntime();
    ASSERT_TRUE(raw.ok()) << raw.status();
    // A client whose asynchronous operations travel on a Shoal.Pipe stream. Its first get reads
    // the collection's schema (a blocking call); the next ones go on the pipe.
    ConnectOptions pipe_options = cluster_->connect_options();
    pipe_options.pipe = true;
    auto piped_db = Database::Connect(cluster_->uri(), pipe_options);
    ASSERT_TRUE(piped_db.ok()) << piped_db.status();
    auto piped = (*piped_db)->GetCollection("calls");
    ASSERT_TRUE(piped.ok()) << piped.status();
    for (int i = 0; i < 2; ++i) {
      Status warm;
      piped->GetAsync("none", [&warm](StatusOr<Document> d) { warm = d.status(); });
      (*piped_db)->WaitAsync();
      ASSERT_EQ(warm.code(), StatusCode::kNotFound) << warm;
    }
    // kLimit writes held at the node (each pauses after it is applied).
    std::atomic<int> ok{0};
    std::vector<std::thread> held;
    for (int i = 0; i < kLimit; ++i) {
      held.emplace_back([&, i] {
        auto answer = (*raw)->Call(Address::Node(NodeId(1)),
                                   transport::WriteRequest{.epoch = epoch,
                                                           .op = transport::WriteOp::kUpsert,
                                                           .collection = id,
                                                           .primary_key = fmt::format("h{}", i),
                                                           .body = "{}",
                                                           .expected_version = 0,
                                                           .via_move = std::nullopt},
                                   kTimeout);
        if (answer.ok() && answer->status.ok()) ++ok;
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    const Status refused = c->Upsert("one-more", "{}").status();
    EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused;
    EXPECT_NE(MessageOf(refused).find(names), std::string_view::npos) << refused;
    // A call on the pipe stream counts the same.
    Status piped_refused;
    piped->GetAsync("none", [&piped_refused](StatusOr<Document> d) { piped_refused = d.status(); });
    (*piped_db)->WaitAsync();
    EXPECT_EQ(piped_refused.code(), StatusCode::kResourceExhausted) << piped_refused;
    EXPECT_NE(MessageOf(piped_refused).find(names), std::string_view::npos) << piped_refused;
    for (auto& t : held) t.join();
    EXPECT_EQ(ok.load(), kLimit);
    // Nothing of the refused call was written; the node serves again.
    EXPECT_EQ(c->Get("one-more").status().code(), StatusCode::kNotFound);
    // (Reads only: a write here would pause past the client's call timeout.)
    for (int i = 0; i < kLimit; ++i) EXPECT_TRUE(c->Get(fmt::format("h{}", i)).ok()) << i;
    (*raw)->Shutdown();
  }

  std::unique_ptr<ProcessCluster> cluster_;
};

TEST_F(CallLimitsTest, PerClientAddressAndPerNode) {
  Check({"--max-calls-per-address", "4"},
        "already has 4 calls in flight; the limit is 4 per client address");
  Check({"--max-calls", "4"}, "already handles 4 calls; the limit is 4 calls in flight");
}

// Scan streams served at once by one node (--max-streams 2): two streams whose readers stall
// hold the node's slots (its writes wait on flow control); a third is refused before any page,
// and is served once they end.
TEST(StreamLimitsTest, ConcurrentStreamsPerNode) {
  ProcessCluster cluster(ShoalBinary());
  cluster.SetNodeArgs(1, {"--max-streams", "2"});
  ASSERT_TRUE(cluster.StartCoordinator(1, 1).ok());
  ASSERT_TRUE(cluster.StartNode(1).ok());
  ASSERT_TRUE(cluster.WaitServing(30).ok());
  auto db = Database::Connect(cluster.uri(), cluster.connect_options());
  ASSERT_TRUE(db.ok()) << db.status();
  auto c = (*db)->CreateCollection("streams");
  ASSERT_TRUE(c.ok()) << c.status();
  // 40 documents of 256 KiB: far more than the flow-control windows hold.
  constexpr size_t kDocuments = 40;
  for (size_t batch = 0; batch < 2; ++batch) {
    std::vector<BatchWrite> writes;
    for (size_t i = 0; i < kDocuments / 2; ++i) {
      writes.push_back({.op = BatchOp::kUpsert,
                        .key = fmt::format("s{}-{}", batch, i),
                        .json = BodyOf(256 << 10)});
    }
    auto written = c->Batch(writes);
    ASSERT_TRUE(written.ok()) << written.status();
  }
  const QueryOptions one_per_message{.filter = {}, .limit = 1, .cursor = ""};
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  std::vector<size_t> read(2, 0);
  std::vector<Status> ended(2);
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      ended[r] = c->QueryStream(one_per_message, [&](const Document&) {
        if (read[r]++ == 0) ++started;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return OkStatus();
      });
    });
  }
  for (int i = 0; i < 1000 && started.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(started.load(), 2);
  size_t third_read = 0;
  const auto count = [&third_read](const Document&) {
    ++third_read;
    return OkStatus();
  };
  ExpectRefused(c->QueryStream(one_per_message, count), StatusCode::kResourceExhausted,
                "this server already serves 2 streams; the limit is 2", "third stream");
  EXPECT_EQ(third_read, 0u);
  release = true;
  for (auto& t : readers) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(ended[r].ok()) << ended[r];
    EXPECT_EQ(read[r], kDocuments);
  }
  // The slots are given back: a stream and another client are served.
  ASSERT_TRUE(c->QueryStream(one_per_message, count).ok());
  EXPECT_EQ(third_read, kDocuments);
  auto other = Database::Connect(cluster.uri(), cluster.connect_options());
  ASSERT_TRUE(other.ok()) << other.status();
  auto again = (*other)->GetCollection("streams");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->Get("s0-0").ok());
  if (::testing::Test::HasFailure()) std::fprintf(stderr, "%s\n", cluster.LogTails(15).c_str());
}

}  // namespace
}  // namespace shoal::cluster_test
