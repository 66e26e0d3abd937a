// Mutual TLS between GrpcRuntimes (tls_credentials.h): who may connect, hostname checks, and
// certificates rotated under a running server.

#include "src/net/tls_credentials.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "proto/shoal.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/test_echo_service.h"
#include "src/net/test_peer_certificate.h"
#include "src/security/certificates.h"
#include "src/security/passwords.h"
#include "src/security/users.h"

namespace shoal::net {
namespace {

using transport::Address;

constexpr transport::Micros kTimeout = 10'000'000;

// A CA with a node certificate (loopback only) and the client certificate of `admin`.
void MakeCluster(const std::string& dir) {
  ASSERT_TRUE(security::CreateCa({.certs_dir = dir}).ok());
  ASSERT_TRUE(security::CreateNodeCert({.certs_dir = dir, .hosts = {}}).ok());
  ASSERT_TRUE(security::CreateClientCert({.certs_dir = dir, .user = "admin"}).ok());
}

class TlsTest : public ::testing::TestWithParam<GrpcServerMode> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-tls-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    MakeCluster(certs_ = root_ + "/certs");
    MakeCluster(foreign_ = root_ + "/foreign");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  TransportSecurity NodeSecurity(const std::string& dir) const {
    return {.tls = security::NodeTlsFiles(dir), .reload_seconds = 1};
  }
  TransportSecurity ClientSecurity(const std::string& dir) const {
    return {.tls = security::ClientTlsFiles(dir, "admin"), .reload_seconds = 1};
  }
  // A server serving an EchoService as the coordinator.
  std::unique_ptr<GrpcRuntime> StartServer(const std::string& listen = "127.0.0.1:0") {
    auto server = GrpcRuntime::Start(
        {.listen = listen, .server_mode = GetParam(), .security = NodeSecurity(certs_)});
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    service_ = std::make_shared<EchoService>(**server);
    (*server)->Serve(Address::Coordinator(), service_);
    (void)(*server)->authenticator().Install(std::make_shared<const security::UserTable>(Users()));
    return std::move(*server);
  }
  // admin (certificate only), writer and reader (passwords).
  static security::UserTable Users() {
    security::UserTable table;
    table = table.Add({.name = "admin", .role = security::Role::kAdmin}).value();
    table = table
                .Add({.name = "writer",
                      .role = security::Role::kWrite,
                      .password_hash = security::HashPassword("writer's password").value()})
                .value();
    table = table
                .Add({.name = "reader",
                      .role = security::Role::kRead,
                      .password_hash = security::HashPassword("reader's password").value()})
                .value();
    return table;
  }
  TransportSecurity PasswordSecurity(const std::string& user, const std::string& password) const {
    TransportSecurity security = ClientSecurity(certs_);
    security.tls->user = user;
    security.tls->password = password;
    return security;
  }
  StatusOr<transport::Response> Write(const std::string& address,
                                      const TransportSecurity& security) {
    SHOAL_ASSIGN_OR_RETURN(auto client,
                           GrpcRuntime::Start({.coordinator = address, .security = security}));
    return client->Call(Address::Coordinator(), transport::WriteRequest{.body = "hello"}, kTimeout);
  }

  std::string root_;
  std::string certs_;
  std::string foreign_;
  std::shared_ptr<EchoService> service_;
};

INSTANTIATE_TEST_SUITE_P(ServerModes, TlsTest,
                         ::testing::Values(GrpcServerMode::kSync, GrpcServerMode::kCallback),
                         [](const auto& info) {
                           return info.param == GrpcServerMode::kSync ? "Sync" : "Callback";
                         });

TEST_P(TlsTest, ClientWithAClusterCertificateIsServed) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto reply = Write(server->advertised_address(), ClientSecurity(certs_));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(std::get<transport::WriteResponse>(reply->body).version, 5u);
  // A node's certificate is a client identity too (nodes dial nodes and the coordinator).
  EXPECT_TRUE(Write(server->advertised_address(), NodeSecurity(certs_)).ok());
}

TEST_P(TlsTest, PlaintextClientCannotConnect) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto reply = Write(server->advertised_address(), TransportSecurity{});
  ASSERT_FALSE(reply.ok());
  // Certainly not handled: nothing reached the service.
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable) << reply.status();
  EXPECT_EQ(service_->last_from.load(), Address::Client(99));
  EXPECT_NE(reply.status().message().find("it requires TLS and this client has none"),
            std::string_view::npos)
      << reply.status();
}

// The hint of a connection closed at once is for one that never carried a call; one closed
// during a call is a server that stopped, and a certificate is not to blame.
TEST(SecurityHintTest, OnlyAConnectionThatNeverCarriedACallBlamesTheCertificates) {
  EXPECT_NE(SecurityHint("failed to connect to all addresses; last error: UNAVAILABLE: "
                         "ipv4:127.0.0.1:7400: Socket closed"),
            "");
  EXPECT_EQ(SecurityHint("Socket closed"), "");
  EXPECT_NE(SecurityHint("Ssl handshake failed: SSL_ERROR_SSL"), "");
  EXPECT_EQ(SecurityHint("Deadline Exceeded"), "");
}

TEST_P(TlsTest, ClientOfAnotherCaIsRefused) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto reply = Write(server->advertised_address(), ClientSecurity(foreign_));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable) << reply.status();
  EXPECT_EQ(service_->last_from.load(), Address::Client(99));
  // The same from a raw channel: the handshake fails, no certificate is learned.
  const PeerAnswer answer = PeerCertificate(server->advertised_address(), ClientSecurity(foreign_));
  EXPECT_FALSE(answer.status.ok());
}

TEST_P(TlsTest, ServerOfAnotherCaIsRefused) {
  auto impostor = GrpcRuntime::Start(
      {.listen = "127.0.0.1:0", .server_mode = GetParam(), .security = NodeSecurity(foreign_)});
  ASSERT_TRUE(impostor.ok()) << impostor.status();
  auto service = std::make_shared<EchoService>(**impostor);
  (*impostor)->Serve(Address::Coordinator(), service);
  auto reply = Write((*impostor)->advertised_address(), ClientSecurity(certs_));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(service->last_from.load(), Address::Client(99));
}

TEST_P(TlsTest, ServerCertificateMustNameTheHostDialled) {
  // Listening on every address, dialled by one its certificate does not name.
  auto server = StartServer("0.0.0.0:0");
  ASSERT_NE(server, nullptr);
  const std::string port =
      server->advertised_address().substr(server->advertised_address().rfind(':') + 1);
  EXPECT_TRUE(Write("127.0.0.1:" + port, ClientSecurity(certs_)).ok());
  EXPECT_TRUE(Write("localhost:" + port, ClientSecurity(certs_)).ok());
  auto reply = Write("127.0.0.2:" + port, ClientSecurity(certs_));
  ASSERT_FALSE(reply.ok()) << "127.0.0.2 is not in the certificate";
  // Named in a new certificate, it is accepted once the server reloaded it.
  ASSERT_TRUE(
      security::CreateNodeCert({.certs_dir = certs_, .hosts = {"127.0.0.2"}, .overwrite = true})
          .ok());
  bool accepted = false;
  for (int i = 0; i < 100 && !accepted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    accepted = Write("127.0.0.2:" + port, ClientSecurity(certs_)).ok();
  }
  EXPECT_TRUE(accepted);
}

TEST_P(TlsTest, RotatedCertificateServesNewConnectionsWithoutARestart) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  auto client = GrpcRuntime::Start({.coordinator = address, .security = ClientSecurity(certs_)});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(
      (*client)->Call(Address::Coordinator(), transport::WriteRequest{.body = "a"}, kTimeout).ok());
  const PeerAnswer before = PeerCertificate(address, ClientSecurity(certs_));
  ASSERT_TRUE(before.status.ok()) << before.status.error_message();
  auto old_cert = security::ParseCertificate(before.certificate_pem);
  ASSERT_TRUE(old_cert.ok());
  EXPECT_EQ(old_cert->serial_hex,
            security::ReadCertificate(security::NodeCertPath(certs_))->serial_hex);

  ASSERT_TRUE(security::CreateNodeCert({.certs_dir = certs_, .hosts = {}, .overwrite = true}).ok());
  const std::string new_serial =
      security::ReadCertificate(security::NodeCertPath(certs_))->serial_hex;
  ASSERT_NE(new_serial, old_cert->serial_hex);
  std::string served;
  for (int i = 0; i < 100 && served != new_serial; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const PeerAnswer after = PeerCertificate(address, ClientSecurity(certs_));
    ASSERT_TRUE(after.status.ok()) << after.status.error_message();
    served = security::ParseCertificate(after.certificate_pem)->serial_hex;
  }
  EXPECT_EQ(served, new_serial);
  // The client connected before the rotation keeps working.
  EXPECT_TRUE(
      (*client)->Call(Address::Coordinator(), transport::WriteRequest{.body = "b"}, kTimeout).ok());
}

TEST_P(TlsTest, OnlyNodeCertificatesSendTheClusterMessages) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  // A user's certificate: data requests pass, a fence (a move's step) is refused unread.
  auto user = GrpcRuntime::Start({.coordinator = address, .security = ClientSecurity(certs_)});
  ASSERT_TRUE(user.ok());
  EXPECT_TRUE(
      (*user)->Call(Address::Coordinator(), transport::WriteRequest{.body = "a"}, kTimeout).ok());
  service_->last_from = Address::Client(99);
  auto fence = (*user)->Call(Address::Coordinator(), transport::FenceRequest{}, kTimeout);
  ASSERT_FALSE(fence.ok());
  EXPECT_EQ(fence.status().code(), StatusCode::kPermissionDenied) << fence.status();
  EXPECT_NE(std::string(MessageOf(fence.status())).find("'admin'"), std::string::npos);
  EXPECT_EQ(service_->last_from.load(), Address::Client(99));
  // A node's certificate sends it (the echo service answers it with a typed error).
  auto node = GrpcRuntime::Start({.coordinator = address, .security = NodeSecurity(certs_)});
  ASSERT_TRUE(node.ok());
  auto sent = (*node)->Call(Address::Coordinator(), transport::FenceRequest{}, kTimeout);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(transport::ClusterErrorOf(sent->status), transport::ClusterError::kNotServing);
  // Without TLS there is no identity to check: everything passes (--insecure).
  auto plain_server = GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
  ASSERT_TRUE(plain_server.ok());
  (*plain_server)->Serve(Address::Coordinator(), std::make_shared<EchoService>(**plain_server));
  auto plain = GrpcRuntime::Start({.coordinator = (*plain_server)->advertised_address()});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE((*plain)->Call(Address::Coordinator(), transport::FenceRequest{}, kTimeout).ok());
}

TEST_P(TlsTest, StartRefusesFilesThatDoNotFit) {
  // A key that is not the certificate's.
  auto mismatched = GrpcRuntime::Start(
      {.listen = "127.0.0.1:0",
       .server_mode = GetParam(),
       .security = {.tls = security::TlsFiles{.ca_cert = security::CaCertPath(certs_),
                                              .cert = security::NodeCertPath(certs_),
                                              .key = security::NodeKeyPath(foreign_)}}});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.status().code(), StatusCode::kFailedPrecondition);
  // A certificate the CA bundle does not trust.
  auto untrusted = GrpcRuntime::Start(
      {.listen = "127.0.0.1:0",
       .server_mode = GetParam(),
       .security = {.tls = security::TlsFiles{.ca_cert = security::CaCertPath(certs_),
                                              .cert = security::NodeCertPath(foreign_),
                                              .key = security::NodeKeyPath(foreign_)}}});
  ASSERT_FALSE(untrusted.ok());
  EXPECT_EQ(untrusted.status().code(), StatusCode::kUnauthenticated);
  // A missing file, named; never a key's content in the message.
  auto missing = GrpcRuntime::Start({.security = ClientSecurity(root_ + "/none")});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(mismatched.status().ToString().find("PRIVATE KEY"), std::string::npos);
}

// Every step of a copy move is a cluster message, also those that resume a copy from the
// primary's retained log.
TEST(ClusterSenderTest, ResumeCopyAndRetainedLogNeedANodeCertificate) {
  for (const bool resume : {true, false}) {
    wire::Envelope envelope;
    envelope.mutable_from()->set_kind(wire::Address::CLIENT);
    envelope.mutable_to()->set_kind(wire::Address::NODE);
    envelope.mutable_to()->set_id(1);
    if (resume) {
      envelope.mutable_request()->mutable_resume_copy();
    } else {
      envelope.mutable_request()->mutable_retained_log();
    }
    EXPECT_EQ(CheckClusterSender(envelope, "admin").error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_TRUE(CheckClusterSender(envelope, security::kNodeCommonName).ok());
  }
}

TEST_P(TlsTest, PasswordsAndRolesAreCheckedOnEveryCall) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string address = server->advertised_address();
  const auto wrong = Write(address, PasswordSecurity("writer", "reader's password"));
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnauthenticated) << wrong.status();
  EXPECT_EQ(std::string(MessageOf(wrong.status())).find("reader's password"), std::string::npos);
  const auto reader = Write(address, PasswordSecurity("reader", "reader's password"));
  EXPECT_EQ(reader.status().code(), StatusCode::kPermissionDenied) << reader.status();
  EXPECT_NE(std::string(MessageOf(reader.status())).find("needs the role write"), std::string::npos)
      << reader.status();
  EXPECT_EQ(service_->last_from.load(), Address::Client(99));  // nothing reached the service
  EXPECT_TRUE(Write(address, PasswordSecurity("writer", "writer's password")).ok());
}

TEST_P(TlsTest, AServerThatKnowsNoUsersYetIsUnavailable) {
  auto server = GrpcRuntime::Start(
      {.listen = "127.0.0.1:0", .server_mode = GetParam(), .security = NodeSecurity(certs_)});
  ASSERT_TRUE(server.ok());
  service_ = std::make_shared<EchoService>(**server);
  (*server)->Serve(Address::Coordinator(), service_);
  const auto reply = Write((*server)->advertised_address(), ClientSecurity(certs_));
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable) << reply.status();
  // Cluster processes do not need the users.
  EXPECT_TRUE(Write((*server)->advertised_address(), NodeSecurity(certs_)).ok());
}

}  // namespace
}  // namespace shoal::net
