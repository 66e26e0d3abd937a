// Revoked certificates between GrpcRuntimes (tls_credentials.h, security/revocation.h): a CRL of
// the cluster CA refuses a client or a server at the handshake, from the next connection of a
// process already running, while every other certificate of the CA still connects; and a server
// refuses the calls of a connection opened before the revocation once it read the CRL again
// (security/revocation_cache.h), as a client refuses the answers of such a server.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/net/grpc_runtime.h"
#include "src/net/test_echo_service.h"
#include "src/net/test_peer_certificate.h"
#include "src/net/tls_credentials.h"
#include "src/security/certificates.h"
#include "src/security/revocation.h"
#include "src/security/users.h"

namespace shoal::net {
namespace {

using transport::Address;

constexpr transport::Micros kTimeout = 10'000'000;
// A CRL written this long ago has been read by a server (security::RevocationCache's bound).
constexpr auto kAfterReread = security::kDefaultCrlRereadInterval + std::chrono::milliseconds(200);

class TlsRevocationTest : public ::testing::TestWithParam<GrpcServerMode> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-tls-revocation-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    certs_ = root_ + "/certs";
    ASSERT_TRUE(security::CreateCa({.certs_dir = certs_}).ok());
    ASSERT_TRUE(security::CreateNodeCert({.certs_dir = certs_, .hosts = {}}).ok());
    for (const char* user : {"admin", "writer"}) {
      ASSERT_TRUE(security::CreateClientCert({.certs_dir = certs_, .user = user}).ok());
    }
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // `files` checked against the CRLs of `crl_dir` ("": the default, certs/crl).
  static TransportSecurity Security(security::TlsFiles files, const std::string& crl_dir = "") {
    files.crl_dir = crl_dir;
    return {.tls = std::move(files), .reload_seconds = 1};
  }
  // A client that holds a stolen key and ignores the cluster's CRLs (so that it starts and
  // presents its certificate).
  TransportSecurity Thief(const std::string& user) const {
    return Security(security::ClientTlsFiles(certs_, user), root_ + "/no-crl");
  }

  std::unique_ptr<GrpcRuntime> StartServer(const TransportSecurity& security) {
    auto server = GrpcRuntime::Start(
        {.listen = "127.0.0.1:0", .server_mode = GetParam(), .security = security});
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    service_ = std::make_shared<EchoService>(**server);
    (*server)->Serve(Address::Coordinator(), service_);
    security::UserTable table;
    table = table.Add({.name = "admin", .role = security::Role::kAdmin}).value();
    table = table.Add({.name = "writer", .role = security::Role::kWrite}).value();
    (void)(*server)->authenticator().Install(std::make_shared<const security::UserTable>(table));
    return std::move(*server);
  }

  // One write from a new client runtime (a new connection and handshake).
  static Status Write(const std::string& address, const TransportSecurity& security) {
    SHOAL_ASSIGN_OR_RETURN(auto client,
                           GrpcRuntime::Start({.coordinator = address, .security = security}));
    auto reply =
        client->Call(Address::Coordinator(), transport::WriteRequest{.body = "hello"}, kTimeout);
    return reply.ok() ? OkStatus() : reply.status();
  }

  // A runtime with a channel to `address`, kept open by the caller.
  static std::unique_ptr<GrpcRuntime> Connect(const std::string& address,
                                              const TransportSecurity& security) {
    auto client = GrpcRuntime::Start({.coordinator = address, .security = security});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }
  static Status Send(GrpcRuntime& client) {
    auto reply =
        client.Call(Address::Coordinator(), transport::WriteRequest{.body = "hello"}, kTimeout);
    return reply.ok() ? OkStatus() : reply.status();
  }
  // Refused as revoked, and not handled.
  void ExpectRefusedAsRevoked(GrpcRuntime& client, const std::string& cert_path) {
    service_->last_from = Address::Client(99);
    const Status refused = Send(client);
    EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated) << refused;
    const std::string serial = security::ReadCertificate(cert_path)->serial_hex;
    EXPECT_NE(MessageOf(refused).find("certificate serial " + serial), std::string_view::npos)
        << refused;
    EXPECT_NE(MessageOf(refused).find("was revoked"), std::string_view::npos) << refused;
    EXPECT_EQ(service_->last_from.load(), Address::Client(99)) << "a request was handled";
  }

  Status Revoke(const std::string& cert_path) {
    return security::Revoke({.certs_dir = certs_, .cert_files = {cert_path}}).status();
  }

  std::string root_;
  std::string certs_;
  std::shared_ptr<EchoService> service_;
};

INSTANTIATE_TEST_SUITE_P(ServerModes, TlsRevocationTest,
                         ::testing::Values(GrpcServerMode::kSync, GrpcServerMode::kCallback),
                         [](const auto& info) {
                           return info.param == GrpcServerMode::kSync ? "Sync" : "Callback";
                         });

TEST_P(TlsRevocationTest, RevokedClientIsRefusedAtTheHandshakeWithoutARestart) {
  // Started before anything is revoked: the CRL directory does not exist yet.
  auto server = StartServer(Security(security::NodeTlsFiles(certs_)));
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  ASSERT_TRUE(Write(address, Thief("admin")).ok());
  ASSERT_TRUE(Write(address, Thief("writer")).ok());

  // The first CRL (.r0), written while the server runs.
  ASSERT_TRUE(Revoke(security::ClientCertPath(certs_, "admin")).ok());
  service_->last_from = Address::Client(99);
  const Status refused = Write(address, Thief("admin"));
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused;
  // TLS 1.3: the server checks the client's certificate after the client finished, and closes.
  EXPECT_NE(MessageOf(refused).find("revoked"), std::string_view::npos) << refused;
  EXPECT_EQ(service_->last_from.load(), Address::Client(99)) << "a request was handled";
  EXPECT_FALSE(PeerCertificate(address, Thief("admin")).status.ok());
  EXPECT_TRUE(Write(address, Thief("writer")).ok());
  EXPECT_TRUE(Write(address, Security(security::NodeTlsFiles(certs_))).ok());

  // The next CRL (.r1) is read too.
  ASSERT_TRUE(Revoke(security::ClientCertPath(certs_, "writer")).ok());
  EXPECT_FALSE(Write(address, Thief("writer")).ok());
  EXPECT_FALSE(Write(address, Thief("admin")).ok());
  EXPECT_TRUE(Write(address, Security(security::NodeTlsFiles(certs_))).ok());

  // A client that reads the CRLs itself refuses to start with a revoked identity.
  auto own = GrpcRuntime::Start(
      {.coordinator = address, .security = Security(security::ClientTlsFiles(certs_, "admin"))});
  EXPECT_EQ(own.status().code(), StatusCode::kUnauthenticated) << own.status();
}

TEST_P(TlsRevocationTest, RevokedServerIsRefusedByClients) {
  // A server that holds a stolen node key and ignores the CRLs.
  auto server =
      StartServer(Security(security::NodeTlsFiles(certs_), root_ + "/server-ignores-crls"));
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  const TransportSecurity client = Security(security::ClientTlsFiles(certs_, "admin"));
  ASSERT_TRUE(Write(address, client).ok());

  ASSERT_TRUE(Revoke(security::NodeCertPath(certs_)).ok());
  service_->last_from = Address::Client(99);
  const Status refused = Write(address, client);
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused;
  EXPECT_TRUE(HandshakeFailed(refused)) << refused;
  EXPECT_EQ(service_->last_from.load(), Address::Client(99)) << "a request was handled";
  EXPECT_FALSE(PeerCertificate(address, client).status.ok());
  // A client that does not read the CRLs still connects: revocation is each peer's own check.
  EXPECT_TRUE(Write(address, Thief("admin")).ok());
}

TEST_P(TlsRevocationTest, MissingOrEmptyCrlDirectoryRevokesNothing) {
  std::filesystem::create_directories(root_ + "/empty");
  auto server = StartServer(Security(security::NodeTlsFiles(certs_), root_ + "/empty"));
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(Write(server->advertised_address(),
                    Security(security::ClientTlsFiles(certs_, "admin"), root_ + "/missing"))
                  .ok());
}

// A client connected and served before its certificate is revoked is refused on the same
// channel once the server read the CRL again; another client's channel keeps being served.
TEST_P(TlsRevocationTest, OpenConnectionOfARevokedClientIsRefusedAfterTheReread) {
  auto server = StartServer(Security(security::NodeTlsFiles(certs_)));
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  auto admin = Connect(address, Thief("admin"));
  auto writer = Connect(address, Thief("writer"));
  ASSERT_NE(admin, nullptr);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(Send(*admin).ok());
  ASSERT_TRUE(Send(*writer).ok());

  ASSERT_TRUE(Revoke(security::ClientCertPath(certs_, "admin")).ok());
  std::this_thread::sleep_for(kAfterReread);
  ExpectRefusedAsRevoked(*admin, security::ClientCertPath(certs_, "admin"));
  ExpectRefusedAsRevoked(*admin, security::ClientCertPath(certs_, "admin"));
  EXPECT_TRUE(Send(*writer).ok());
  EXPECT_NE(service_->last_from.load(), Address::Client(99));
}

// The same for a cluster process: a node whose certificate is revoked is refused on the channel
// it opened before, while another node certificate of the CA keeps being served.
TEST_P(TlsRevocationTest, OpenConnectionOfARevokedNodeIsRefusedAfterTheReread) {
  // A second node certificate of the same CA, for the revoked node.
  const std::string peer = root_ + "/peer";
  std::filesystem::create_directories(peer);
  std::filesystem::copy_file(security::CaCertPath(certs_), security::CaCertPath(peer));
  std::filesystem::copy_file(security::CaKeyPath(certs_), security::CaKeyPath(peer));
  ASSERT_TRUE(security::CreateNodeCert({.certs_dir = peer, .hosts = {}}).ok());

  auto server = StartServer(Security(security::NodeTlsFiles(certs_)));
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  auto revoked = Connect(address, Security(security::NodeTlsFiles(peer), root_ + "/no-crl"));
  auto kept = Connect(address, Security(security::NodeTlsFiles(certs_)));
  ASSERT_NE(revoked, nullptr);
  ASSERT_NE(kept, nullptr);
  ASSERT_TRUE(Send(*revoked).ok());
  ASSERT_TRUE(Send(*kept).ok());

  ASSERT_TRUE(Revoke(security::NodeCertPath(peer)).ok());
  std::this_thread::sleep_for(kAfterReread);
  ExpectRefusedAsRevoked(*revoked, security::NodeCertPath(peer));
  EXPECT_TRUE(Send(*kept).ok());
}

// The client half: a server whose certificate is revoked after the client connected keeps its
// connection, but once the client read the CRL again it refuses every answer from it, of a unary
// call, an asynchronous one and one over the pipe, while the CRL-ignoring server goes on serving.
TEST_P(TlsRevocationTest, OpenConnectionToARevokedServerIsRefusedByTheClientAfterTheReread) {
  auto server =
      StartServer(Security(security::NodeTlsFiles(certs_), root_ + "/server-ignores-crls"));
  ASSERT_NE(server, nullptr);
  const Address node = Address::Node(NodeId(1));
  server->Serve(node, service_);
  const std::string address = server->advertised_address();
  const TransportSecurity security = Security(security::ClientTlsFiles(certs_, "admin"));
  std::vector<std::unique_ptr<GrpcRuntime>> clients;
  for (const bool pipe : {false, true}) {
    auto client = GrpcRuntime::Start({.coordinator = address, .pipe = pipe, .security = security});
    ASSERT_TRUE(client.ok()) << client.status();
    (*client)->SetAddress(node, address);
    clients.push_back(std::move(*client));
  }
  // CallAsync to a node: plain asynchronous calls for the first client, the pipe for the second.
  const auto call_async = [&node](GrpcRuntime& client) {
    std::promise<Status> done;
    client.CallAsync(node, transport::WriteRequest{.body = "hello"}, kTimeout,
                     [&done](StatusOr<transport::Response> reply) {
                       done.set_value(reply.ok() ? OkStatus() : reply.status());
                     });
    return done.get_future().get();
  };
  for (auto& client : clients) {
    ASSERT_TRUE(Send(*client).ok());
    ASSERT_TRUE(call_async(*client).ok());
  }

  ASSERT_TRUE(Revoke(security::NodeCertPath(certs_)).ok());
  std::this_thread::sleep_for(kAfterReread);
  const std::string serial = security::ReadCertificate(security::NodeCertPath(certs_))->serial_hex;
  for (auto& client : clients) {
    for (const Status& refused : {Send(*client), call_async(*client)}) {
      EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated) << refused;
      EXPECT_NE(MessageOf(refused).find("the server's certificate serial " + serial),
                std::string_view::npos)
          << refused;
      EXPECT_NE(MessageOf(refused).find("was revoked"), std::string_view::npos) << refused;
    }
  }
  // The server itself goes on serving a client that ignores the CRLs.
  EXPECT_TRUE(Write(address, Thief("admin")).ok());
}

}  // namespace
}  // namespace shoal::net
