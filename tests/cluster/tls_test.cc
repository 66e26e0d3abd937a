// Mutual TLS between real `shoal` processes (docs/security.md): a plaintext client, a client
// certificate of another CA and a node of another CA are refused with nothing read or changed;
// a node whose certificate was revoked (`shoal certs revoke`) while the cluster runs cannot join
// it; certificates rotated under a running cluster are served to new connections while the
// cluster keeps serving; a server given neither --certs-dir nor --insecure does not start; no
// private key ever reaches a log or a command's output.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/net/test_peer_certificate.h"
#include "src/security/certificates.h"
#include "src/security/tls_files.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"
#include "tests/cluster/workload_check.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The base64 lines of every private key under `dir` (the PEM bodies a leak would show).
std::vector<std::string> KeyLines(const std::string& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".key") continue;
    std::istringstream in(ReadAll(entry.path().string()));
    for (std::string line; std::getline(in, line);) {
      if (line.find("-----") == std::string::npos && line.size() >= 32) lines.push_back(line);
    }
  }
  return lines;
}

// `command` through the shell: its exit status, and stdout and stderr together in *out.
int Shell(const std::string& command, std::string* out) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  out->clear();
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) out->append(buffer, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class TlsClusterTest : public testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<ProcessCluster>(ShoalBinary());
    foreign_ = cluster_->dir() + "/foreign-certs";
    ASSERT_TRUE(security::CreateCa({.certs_dir = foreign_}).ok());
    ASSERT_TRUE(security::CreateNodeCert({.certs_dir = foreign_, .hosts = {}}).ok());
    ASSERT_TRUE(security::CreateClientCert({.certs_dir = foreign_, .user = "admin"}).ok());
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    ExpectNoKeyInLogs();
    workload_.reset();
    cluster_.reset();
  }

  // Coordinator and nodes 1..nodes, serving over mutual TLS.
  void StartCluster(uint32_t initial_nodes, uint32_t started_nodes) {
    ASSERT_TRUE(cluster_->StartCoordinator(initial_nodes, 8).ok());
    for (uint32_t id = 1; id <= started_nodes; ++id) {
      Status started = cluster_->StartNode(id);
      ASSERT_TRUE(started.ok()) << started;
    }
    Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
  }

  // Every log and output file of the test (the certificates' own directories aside) holds no
  // line of any private key, and no PEM private key block.
  void ExpectNoKeyInLogs() {
    const std::vector<std::string> key_lines = KeyLines(cluster_->dir());
    ASSERT_FALSE(key_lines.empty());
    std::error_code ec;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(cluster_->dir(), ec)) {
      const std::string name = entry.path().filename().string();
      const bool output = name.ends_with(".log") || name.ends_with(".out");
      if (!entry.is_regular_file() || !output) continue;
      const std::string text = ReadAll(entry.path().string());
      EXPECT_EQ(text.find("PRIVATE KEY"), std::string::npos) << entry.path();
      for (const auto& line : key_lines) {
        EXPECT_EQ(text.find(line), std::string::npos) << "a key line in " << entry.path();
      }
    }
  }

  // The coordinator's address and every node's that `shoal status` lists.
  std::vector<std::string> ProcessAddresses() {
    std::vector<std::string> addresses = {cluster_->CoordinatorAddress(kCoordinator)};
    std::string out;
    EXPECT_EQ(cluster_->RunCli({"status", "--json"}, &out), 0) << out;
    const auto status = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    if (status.is_discarded()) return addresses;
    for (const auto& node : status["nodes"]) {
      const std::string address = node.value("address", "");
      if (!address.empty()) addresses.push_back(address);
    }
    return addresses;
  }

  net::TransportSecurity ForeignClient() const {
    return {.tls = security::ClientTlsFiles(foreign_, "admin")};
  }

  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Workload> workload_;
  std::string foreign_;
};

TEST_F(TlsClusterTest, PlaintextClientCannotConnect) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(1, 1));
  std::string out;
  std::string err;
  EXPECT_EQ(cluster_->RunCliWith({"status", "--json"}, {"--insecure"}, &out, &err), 1) << out;
  EXPECT_NE(err.find("error: UNAVAILABLE"), std::string::npos) << err;
  std::fprintf(stderr, "[ tls ] a plaintext `shoal status` says: %s", err.c_str());
  ConnectOptions plaintext;
  plaintext.insecure = true;
  auto db = Database::Connect(cluster_->uri(), plaintext);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable) << db.status();
  // The same cluster serves a client with the admin certificate.
  EXPECT_EQ(cluster_->RunCli({"status", "--json"}, &out), 0) << out;
}

TEST_F(TlsClusterTest, ClientOfAnotherCaIsRefusedAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(2, 2));
  std::string out;
  std::string err;
  EXPECT_EQ(cluster_->RunCliWith({"put", "docs", "k", R"({"a": 1})"}, {"--certs-dir", foreign_},
                                 &out, &err),
            1);
  EXPECT_NE(err.find("error: UNAVAILABLE"), std::string::npos) << err;
  ConnectOptions foreign;
  foreign.certs_dir = foreign_;
  EXPECT_FALSE(Database::Connect(cluster_->uri(), foreign).ok());
  // Straight to each node, bypassing the coordinator: the handshake fails too.
  const std::vector<std::string> addresses = ProcessAddresses();
  ASSERT_EQ(addresses.size(), 3u);
  for (const auto& host_port : addresses) {
    const net::PeerAnswer answer = net::PeerCertificate(host_port, ForeignClient());
    EXPECT_FALSE(answer.status.ok()) << host_port;
    EXPECT_TRUE(answer.certificate_pem.empty()) << host_port;
  }
  // Nothing was written: the collection does not even exist.
  EXPECT_EQ(cluster_->RunCliWith({"get", "docs", "k"}, {"--certs-dir", cluster_->certs_dir()}, &out,
                                 &err),
            1);
  EXPECT_NE(err.find("UNKNOWN_COLLECTION"), std::string::npos) << err;
}

TEST_F(TlsClusterTest, NodeOfAnotherCaCannotJoin) {
  // Nodes 1 and 2 of the cluster; node 3 runs with a CA, node certificate and trust of its own.
  ASSERT_NO_FATAL_FAILURE(StartCluster(2, 2));
  cluster_->SetNodeCertsDir(3, foreign_);
  ASSERT_TRUE(cluster_->StartNode(3).ok());
  std::string out;
  std::string err;
  // Its heartbeats never reach the coordinator, which cannot reach it either: add-node refuses
  // it and changes nothing.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(cluster_->RunCliWith({"add-node", "--id", "3", "--no-wait", "--json"},
                                 {"--certs-dir", cluster_->certs_dir()}, &out, &err),
            1);
  EXPECT_NE(err.find("FAILED_PRECONDITION"), std::string::npos) << err;
  auto state = cluster_->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->map->nodes().size(), 2u) << state->map->DebugString();
  // Its own handshakes fail, logged by it (gRPC's log) and it never learned the cluster's map.
  EXPECT_TRUE(cluster_->LogShows(3, "andshake")) << cluster_->LogTails(20);
  // Nor can it take part in a move: a node of the cluster refuses its connection, so it can
  // neither fetch a bucket file nor be sent one.
  const std::vector<std::string> addresses = ProcessAddresses();
  ASSERT_EQ(addresses.size(), 3u);
  for (const auto& host_port : addresses) {
    const net::PeerAnswer answer = net::PeerCertificate(
        host_port, {.tls = security::NodeTlsFiles(foreign_), .reload_seconds = 1});
    EXPECT_FALSE(answer.status.ok()) << host_port;
  }
  // The cluster serves on.
  EXPECT_EQ(cluster_->RunCli({"put", "docs", "k", R"({"a": 1})"}, &out), 0) << out;
}

TEST_F(TlsClusterTest, NodeWithARevokedCertificateCannotJoin) {
  // Nodes 1 and 2 of the cluster; node 3 has a node certificate of the cluster CA of its own,
  // revoked while the cluster runs. It does not read the cluster's CRLs (a thief of its key).
  ASSERT_NO_FATAL_FAILURE(StartCluster(2, 2));
  const std::string certs = cluster_->certs_dir();
  const std::string stolen = cluster_->dir() + "/stolen-certs";
  std::filesystem::create_directories(stolen);
  std::filesystem::copy_file(security::CaCertPath(certs), security::CaCertPath(stolen));
  ASSERT_TRUE(security::CreateNodeCert(
                  {.certs_dir = stolen, .ca_key = security::CaKeyPath(certs), .hosts = {}})
                  .ok());
  std::string out;
  ASSERT_EQ(Shell(fmt::format("{} certs revoke --certs-dir {} --cert {}", ShoalBinary(), certs,
                              security::NodeCertPath(stolen)),
                  &out),
            0)
      << out;
  ASSERT_EQ(Shell(fmt::format("{} certs list-revoked --certs-dir {}", ShoalBinary(), certs), &out),
            0);
  EXPECT_NE(out.find(security::ReadCertificate(security::NodeCertPath(stolen))->serial_hex),
            std::string::npos)
      << out;
  cluster_->SetNodeCertsDir(3, stolen);
  ASSERT_TRUE(cluster_->StartNode(3).ok());
  // The running coordinator and nodes read the new CRL at their next handshake: node 3's
  // heartbeats never reach the coordinator, and add-node refuses it and changes nothing.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::string err;
  EXPECT_EQ(cluster_->RunCliWith({"add-node", "--id", "3", "--no-wait", "--json"},
                                 {"--certs-dir", certs}, &out, &err),
            1);
  EXPECT_NE(err.find("FAILED_PRECONDITION"), std::string::npos) << err;
  auto state = cluster_->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->map->nodes().size(), 2u) << state->map->DebugString();
  // No process of the cluster accepts a connection with its certificate, so it can neither
  // fetch a bucket file nor be sent one; the cluster's own node certificate still connects.
  const std::vector<std::string> addresses = ProcessAddresses();
  ASSERT_EQ(addresses.size(), 3u);
  security::TlsFiles thief = security::NodeTlsFiles(stolen);
  for (const auto& host_port : addresses) {
    EXPECT_FALSE(net::PeerCertificate(host_port, {.tls = thief, .reload_seconds = 1}).status.ok())
        << host_port;
    EXPECT_TRUE(
        net::PeerCertificate(host_port, {.tls = security::NodeTlsFiles(certs), .reload_seconds = 1})
            .status.ok())
        << host_port;
  }
  EXPECT_EQ(cluster_->RunCli({"put", "docs", "k", R"({"a": 1})"}, &out), 0) << out;
}

TEST_F(TlsClusterTest, RotatedCertificatesKeepTheClusterServing) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(2, 2));
  workload_ = std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(),
                                         /*threads=*/2, /*keys_per_thread=*/100);
  ASSERT_TRUE(workload_->Start().ok());
  const uint64_t before = workload_->acknowledged();
  const std::string certs = cluster_->certs_dir();
  const std::string old_serial =
      security::ReadCertificate(security::NodeCertPath(certs))->serial_hex;
  // Every process's certificate and the admin's are replaced by new ones of the same CA; the
  // processes read them again within a second (--cert-reload-seconds 1).
  ASSERT_TRUE(security::CreateNodeCert({.certs_dir = certs, .hosts = {}, .overwrite = true}).ok());
  ASSERT_TRUE(
      security::CreateClientCert({.certs_dir = certs, .user = "admin", .overwrite = true}).ok());
  const std::string new_serial =
      security::ReadCertificate(security::NodeCertPath(certs))->serial_hex;
  ASSERT_NE(new_serial, old_serial);
  const std::vector<std::string> addresses = ProcessAddresses();
  ASSERT_EQ(addresses.size(), 3u);  // the coordinator and both nodes
  for (const auto& address : addresses) {
    std::string served;
    for (const auto until = Clock::now() + std::chrono::seconds(15);
         served != new_serial && Clock::now() < until;) {
      const net::PeerAnswer answer = net::PeerCertificate(address, cluster_->client_security());
      if (answer.status.ok())
        served = security::ParseCertificate(answer.certificate_pem)->serial_hex;
      if (served != new_serial) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(served, new_serial) << address << " still serves its old certificate";
  }
  // Writes went on through the rotation, over the connections opened before it.
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       workload_->acknowledged() < before + 50 && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(workload_->acknowledged(), before + 50);
  // A new process-to-process connection (a restarted node dials and is dialled anew) and a new
  // client both use the new certificates.
  ASSERT_TRUE(cluster_->Restart(2).ok());
  ASSERT_TRUE(cluster_->WaitServing(30).ok());
  std::string out;
  EXPECT_EQ(cluster_->RunCli({"status", "--json"}, &out), 0) << out;
  workload_->Stop();
  ExpectNoLoss(*workload_, nullptr);
  EXPECT_TRUE(cluster_->Reap().empty());
}

TEST_F(TlsClusterTest, ServerNeedsCertsDirOrInsecure) {
  const std::string binary = ShoalBinary();
  const std::string data = cluster_->dir() + "/refused";
  std::string out;
  EXPECT_EQ(
      Shell(fmt::format("'{}' node --id 1 --data '{}' --coordinator 127.0.0.1:1", binary, data),
            &out),
      2)
      << out;
  EXPECT_NE(out.find("--certs-dir"), std::string::npos) << out;
  EXPECT_NE(out.find("--insecure"), std::string::npos) << out;
  EXPECT_EQ(
      Shell(fmt::format("'{}' coordinator --data '{}' --listen 127.0.0.1:0", binary, data), &out),
      2)
      << out;
  EXPECT_NE(out.find("--certs-dir"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(data)) << "nothing is created before the check";
  // Both at once is refused too.
  EXPECT_EQ(Shell(fmt::format("'{}' coordinator --data '{}' --insecure --certs-dir '{}'", binary,
                              data, cluster_->certs_dir()),
                  &out),
            2)
      << out;
  // A node certificate that the CA bundle does not trust: a clear error at start.
  const std::string mixed = cluster_->dir() + "/mixed";
  std::filesystem::create_directories(mixed);
  std::filesystem::copy_file(security::CaCertPath(cluster_->certs_dir()),
                             security::CaCertPath(mixed));
  std::filesystem::copy_file(security::NodeCertPath(foreign_), security::NodeCertPath(mixed));
  std::filesystem::copy_file(security::NodeKeyPath(foreign_), security::NodeKeyPath(mixed));
  EXPECT_EQ(Shell(fmt::format("'{}' coordinator --data '{}' --listen 127.0.0.1:0 --certs-dir '{}'",
                              binary, data, mixed),
                  &out),
            1)
      << out;
  EXPECT_NE(out.find("not trusted"), std::string::npos) << out;
}

TEST_F(TlsClusterTest, InsecureServersWarnAtStart) {
  cluster_->SetInsecure();
  ASSERT_NO_FATAL_FAILURE(StartCluster(1, 1));
  EXPECT_TRUE(cluster_->LogShows(kCoordinator, "security.insecure"));
  EXPECT_TRUE(cluster_->LogShows(1, "security.insecure"));
  std::string out;
  EXPECT_EQ(cluster_->RunCli({"put", "docs", "k", R"({"a": 1})"}, &out), 0) << out;
  // A client that insists on TLS cannot talk to it.
  std::string err;
  EXPECT_EQ(cluster_->RunCliWith({"get", "docs", "k"}, {"--certs-dir", cluster_->certs_dir()}, &out,
                                 &err),
            1);
}

}  // namespace
}  // namespace shoal::cluster_test
