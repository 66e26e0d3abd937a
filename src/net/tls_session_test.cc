// TLS session resumption (tls_session_cache.h): what a server sees on the connections of
// channels that share their credentials' session caches, of channels without them, of two
// runtimes, to two servers of one host, after a dropped connection, a server restart or a
// certificate change, and after a revocation. The server
// reads gRPC's "ssl_session_reused" property of each connection's auth context.

#include <absl/synchronization/mutex.h>
#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "proto/shoal.grpc.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/tls_credentials.h"
#include "src/security/certificates.h"
#include "src/security/revocation.h"

namespace shoal::net {
namespace {

using transport::Address;

// One connection as the server saw it.
struct Seen {
  std::string reused;   // "true", "false", or "absent" without the property
  std::string peer;     // the client certificate's common name
  std::string address;  // the client's end of the connection ("ipv4:127.0.0.1:PORT")
};

// Answers Resolve with an empty book, after the per-call revocation check every Shoal server
// makes (TlsCredentials::CheckNotRevoked), and records each call's connection. Thread-safe.
class RecordingService final : public wire::Shoal::Service {
 public:
  explicit RecordingService(std::shared_ptr<const TlsCredentials> credentials)
      : credentials_(std::move(credentials)) {}

  grpc::Status Resolve(grpc::ServerContext* context, const wire::ResolveRequest*,
                       wire::ResolveResponse*) override {
    const auto auth = context->auth_context();
    const auto values = auth->FindPropertyValues(GRPC_SSL_SESSION_REUSED_PROPERTY);
    Seen seen{.reused = values.empty() ? "absent"
                                       : std::string(values.front().data(), values.front().size()),
              .peer = PeerCommonName(*auth),
              .address = context->peer()};
    {
      absl::MutexLock lock(&mu_);
      seen_.push_back(std::move(seen));
    }
    return credentials_->CheckNotRevoked(*auth);
  }
  std::vector<std::string> Reused() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& seen : seen_) out.push_back(seen.reused);
    return out;
  }
  std::vector<std::string> Addresses() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& seen : seen_) out.push_back(seen.address);
    return out;
  }
  std::vector<std::string> Peers() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& seen : seen_) out.push_back(seen.peer);
    return out;
  }

 private:
  const std::shared_ptr<const TlsCredentials> credentials_;
  mutable absl::Mutex mu_;
  std::vector<Seen> seen_ ABSL_GUARDED_BY(mu_);
};

class TlsSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-tls-session-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    certs_ = root_ + "/certs";
    ASSERT_TRUE(security::CreateCa({.certs_dir = certs_}).ok());
    ASSERT_TRUE(security::CreateNodeCert({.certs_dir = certs_, .hosts = {}}).ok());
    ASSERT_TRUE(security::CreateClientCert({.certs_dir = certs_, .user = "admin"}).ok());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    std::filesystem::remove_all(root_);
  }

  // (Re)starts the server on `port` (0: a free one); returns its port. With
  // `max_connection_age_ms`, the server closes every connection that old (gRPC's GOAWAY).
  int StartServer(int port = 0, uint32_t reload_seconds = kDefaultCertReloadSeconds,
                  int max_connection_age_ms = 0) {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
    auto credentials = TlsCredentials::Create(
        {.tls = security::NodeTlsFiles(certs_), .reload_seconds = reload_seconds});
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    service_ = std::make_unique<RecordingService>(*credentials);
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port), (*credentials)->Server(), &bound);
    builder.RegisterService(service_.get());
    if (max_connection_age_ms > 0) {
      builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, max_connection_age_ms);
      builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 100);
    }
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    return bound;
  }

  std::shared_ptr<const TlsCredentials> Client(bool resume) const {
    auto credentials = TlsCredentials::Create(
        {.tls = security::ClientTlsFiles(certs_, "admin"), .resume_sessions = resume});
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : nullptr;
  }

  // One Resolve over a channel of its own (a subchannel pool of its own: a new connection),
  // configured as GrpcRuntime configures its channels unless `configure` is false.
  static grpc::Status ResolveOnce(const std::string& target, const TlsCredentials& credentials,
                                  bool configure = true) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    if (configure) credentials.ConfigureChannel(target, args);
    auto stub =
        wire::Shoal::NewStub(grpc::CreateCustomChannel(target, credentials.Channel(), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    wire::ResolveRequest request;
    wire::ResolveResponse response;
    return stub->Resolve(&context, request, &response);
  }

  std::string root_;
  std::string certs_;
  std::unique_ptr<RecordingService> service_;
  std::unique_ptr<grpc::Server> server_;
};

using Reused = std::vector<std::string>;

TEST_F(TlsSessionTest, ASecondConnectionResumesTheSession) {
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    const std::string target = host + ":" + std::to_string(StartServer());
    const auto client = Client(/*resume=*/true);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(ResolveOnce(target, *client).ok());
    EXPECT_EQ(service_->Reused(), (Reused{"false", "true", "true"})) << host;
    // A resumed connection carries the identity of the certificate of the full handshake.
    EXPECT_EQ(service_->Peers(), (std::vector<std::string>{"admin", "admin", "admin"}));
  }
}

// A runtime's channel whose connection the server closed connects again, and resumes.
TEST_F(TlsSessionTest, ARuntimeResumesAfterADroppedConnection) {
  const std::string target = "127.0.0.1:" + std::to_string(StartServer(
                                                /*port=*/0, kDefaultCertReloadSeconds,
                                                /*max_connection_age_ms=*/300));
  auto runtime = GrpcRuntime::Start(
      {.coordinator = target,
       .security = {.tls = security::ClientTlsFiles(certs_, "admin"), .resume_sessions = true}});
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  for (int i = 0; i < 2; ++i) {
    // No address for node 7: the runtime asks the coordinator for its address book (Resolve).
    (void)(*runtime)->Call(Address::Node(NodeId(7)), transport::GetRequest{}, 10'000'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  EXPECT_EQ(service_->Reused(), (Reused{"false", "true"}));
}

// Two runtimes of one process, of two identities: the second never resumes the first's session
// (it would be served as the first's certificate).
TEST_F(TlsSessionTest, ResumptionNeverLendsAnIdentity) {
  const std::string target = "127.0.0.1:" + std::to_string(StartServer());
  for (const auto& files :
       {security::ClientTlsFiles(certs_, "admin"), security::NodeTlsFiles(certs_)}) {
    auto runtime = GrpcRuntime::Start(
        {.coordinator = target, .security = {.tls = files, .resume_sessions = true}});
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    (void)(*runtime)->Call(Address::Node(NodeId(7)), transport::GetRequest{}, 10'000'000);
  }
  EXPECT_EQ(service_->Reused(), (Reused{"false", "false"}));
  EXPECT_EQ(service_->Peers(), (std::vector<std::string>{"admin", "node"}));
}

// Runtimes of one process with equal TLS settings share their connection to a server, as
// plaintext ones do (TlsCredentials::Shared); another identity, or share_connections = false,
// opens one of its own.
TEST_F(TlsSessionTest, RuntimesOfOneIdentityShareTheirConnection) {
  const std::string target = "127.0.0.1:" + std::to_string(StartServer());
  const auto admin = security::ClientTlsFiles(certs_, "admin");
  std::vector<std::unique_ptr<GrpcRuntime>> runtimes;
  for (const auto& [files, share] : std::vector<std::pair<security::TlsFiles, bool>>{
           {admin, true}, {admin, true}, {admin, false}, {security::NodeTlsFiles(certs_), true}}) {
    auto runtime = GrpcRuntime::Start(
        {.coordinator = target, .security = {.tls = files}, .share_connections = share});
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    // No address for node 7: the runtime asks the coordinator for its address book (Resolve).
    (void)(*runtime)->Call(Address::Node(NodeId(7)), transport::GetRequest{}, 10'000'000);
    runtimes.push_back(*std::move(runtime));  // kept, with its connection
  }
  const std::vector<std::string> addresses = service_->Addresses();
  ASSERT_EQ(addresses.size(), 4u);
  EXPECT_EQ(addresses[0], addresses[1]) << "the same identity: one connection";
  EXPECT_NE(addresses[2], addresses[0]) << "share_connections = false: a connection of its own";
  EXPECT_NE(addresses[3], addresses[0]) << "another identity: a connection of its own";
  EXPECT_NE(addresses[3], addresses[2]);
  EXPECT_EQ(service_->Peers(), (std::vector<std::string>{"admin", "admin", "admin", "node"}));
}

TEST_F(TlsSessionTest, WithoutTheCacheEveryConnectionIsAFullHandshake) {
  const std::string target = "localhost:" + std::to_string(StartServer());
  const auto client = Client(/*resume=*/false);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(ResolveOnce(target, *client).ok());
  EXPECT_EQ(service_->Reused(), (Reused{"false", "false"}));
}

// gRPC keys its cache by host, without the port: one cache for both would offer each server
// the other's ticket.
TEST_F(TlsSessionTest, ServersOfOneHostKeepSessionsOfTheirOwn) {
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    const std::string first = host + ":" + std::to_string(StartServer());
    auto first_service = std::move(service_);
    auto first_server = std::move(server_);
    const std::string second = host + ":" + std::to_string(StartServer());
    const auto client = Client(/*resume=*/true);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(ResolveOnce(first, *client).ok());
      ASSERT_TRUE(ResolveOnce(second, *client).ok());
    }
    EXPECT_EQ(first_service->Reused(), (Reused{"false", "true"})) << host;
    EXPECT_EQ(service_->Reused(), (Reused{"false", "true"})) << host;
    first_server->Shutdown();
  }
}

TEST_F(TlsSessionTest, ARestartedServerAnswersWithAFullHandshake) {
  const int port = StartServer();
  const std::string target = "localhost:" + std::to_string(port);
  const auto client = Client(/*resume=*/true);
  ASSERT_TRUE(ResolveOnce(target, *client).ok());
  ASSERT_EQ(StartServer(port), port);
  // The ticket's key was the first server's: a full handshake, whose session resumes next.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(ResolveOnce(target, *client).ok());
  EXPECT_EQ(service_->Reused(), (Reused{"false", "true"}));
}

TEST_F(TlsSessionTest, TicketsOutliveReloadsUntilTheCertificateChanges) {
  const std::string target =
      "localhost:" + std::to_string(StartServer(/*port=*/0, /*reload_seconds=*/1));
  const auto client = Client(/*resume=*/true);
  ASSERT_TRUE(ResolveOnce(target, *client).ok());
  // The server reads its unchanged files again twice meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_TRUE(ResolveOnce(target, *client).ok());
  // A new certificate makes a new TLS context, with a new ticket key.
  ASSERT_TRUE(security::CreateNodeCert({.certs_dir = certs_, .hosts = {}, .overwrite = true}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_TRUE(ResolveOnce(target, *client).ok());
  EXPECT_EQ(service_->Reused(), (Reused{"false", "true", "false"}));
}

// A client whose certificate is rotated while it keeps reconnecting: gRPC 1.51 frees the TLS
// context's handshaker factory at a reload, and a connection of the old context that receives a
// session ticket afterwards calls into it (a crash in SslSessionLRUCache::Put). Credentials that
// reload never keep a session cache, so no callback can reach a freed factory.
TEST_F(TlsSessionTest, AClientRotatedWhileReconnectingKeepsRunning) {
  const std::string target = "localhost:" + std::to_string(StartServer(
                                                /*port=*/0, /*reload_seconds=*/1,
                                                /*max_connection_age_ms=*/20));
  auto client = TlsCredentials::Create(
      {.tls = security::ClientTlsFiles(certs_, "admin"), .reload_seconds = 1});
  ASSERT_TRUE(client.ok()) << client.status();
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  std::atomic<int> calls{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      grpc::ChannelArguments args;
      (*client)->ConfigureChannel(target, args);
      auto stub =
          wire::Shoal::NewStub(grpc::CreateCustomChannel(target, (*client)->Channel(), args));
      while (!stop.load()) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        wire::ResolveRequest request;
        wire::ResolveResponse response;
        if (stub->Resolve(&context, request, &response).ok()) ++calls;
      }
    });
  }
  for (int rotation = 0; rotation < 12; ++rotation) {
    ASSERT_TRUE(
        security::CreateClientCert({.certs_dir = certs_, .user = "admin", .overwrite = true}).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  stop = true;
  for (auto& caller : callers) caller.join();
  EXPECT_GT(calls.load(), 0);
}

// Credentials that resume sessions read their files once; others pick up replaced files.
TEST_F(TlsSessionTest, CredentialsThatResumeSessionsKeepTheFilesTheyStartedWith) {
  const std::string target = "localhost:" + std::to_string(StartServer());
  const security::TlsFiles admin = security::ClientTlsFiles(certs_, "admin");
  auto resuming =
      TlsCredentials::Create({.tls = admin, .reload_seconds = 1, .resume_sessions = true});
  auto reloading = TlsCredentials::Create({.tls = admin, .reload_seconds = 1});
  ASSERT_TRUE(resuming.ok() && reloading.ok());
  const security::TlsFiles node = security::NodeTlsFiles(certs_);
  const auto overwrite = std::filesystem::copy_options::overwrite_existing;
  std::filesystem::copy_file(node.cert, admin.cert, overwrite);
  std::filesystem::copy_file(node.key, admin.key, overwrite);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_TRUE(ResolveOnce(target, **resuming).ok());
  ASSERT_TRUE(ResolveOnce(target, **reloading).ok());
  EXPECT_EQ(service_->Peers(), (std::vector<std::string>{"admin", "node"}));
}

TEST_F(TlsSessionTest, ARevokedClientResumesASessionButItsCallsAreRefused) {
  const std::string target = "localhost:" + std::to_string(StartServer());
  const auto client = Client(/*resume=*/true);
  ASSERT_TRUE(ResolveOnce(target, *client).ok());
  ASSERT_TRUE(security::Revoke(
                  {.certs_dir = certs_, .cert_files = {security::ClientCertPath(certs_, "admin")}})
                  .ok());
  // OpenSSL verifies no certificate on a resumption, so the handshake does not consult the CRL:
  // the session of before the revocation resumes (docs/security.md, "Session resumption"). The
  // resumed session still presents the certificate, and the server's per-call check refuses
  // every call once it has read the CRL (at most a second later).
  grpc::Status resumed;
  for (int attempt = 0; attempt < 50; ++attempt) {
    resumed = ResolveOnce(target, *client);
    if (!resumed.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(resumed.error_code(), grpc::StatusCode::UNAUTHENTICATED) << resumed.error_message();
  EXPECT_NE(resumed.error_message().find("revoked"), std::string::npos) << resumed.error_message();
  const Reused reused = service_->Reused();
  ASSERT_GE(reused.size(), 2u);
  EXPECT_EQ(reused.front(), "false");
  EXPECT_EQ(reused.back(), "true") << "the refused call came over a resumed session";
  // A full handshake is refused (the same certificate, without the cache).
  EXPECT_FALSE(ResolveOnce(target, *client, /*configure=*/false).ok());
}

}  // namespace
}  // namespace shoal::net
