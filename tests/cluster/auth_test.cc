// Users, roles and passwords between real `shoal` processes (docs/security.md, "Users and
// roles"): a client without credentials or with a wrong password is UNAUTHENTICATED and a read
// user writing is PERMISSION_DENIED, with nothing written; a write user cannot add a node or set
// a failpoint; a user removed at the coordinator is refused by every process within the stated
// bound (5 s; the time is measured and printed); password guessing from one address is
// throttled without touching anything; and no password ever reaches a log or a command's output.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
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
#include "src/net/grpc_runtime.h"
#include "src/security/auth_throttle.h"
#include "src/security/certificates.h"
#include "src/security/tls_files.h"
#include "src/transport/messages.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kRevocationBound{5};
// A certificate of the cluster's CA whose name is no user: mutual TLS passes, nothing else.
constexpr char kGuest[] = "guest";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WritePrivate(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0600);
}

class AuthClusterTest : public testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<ProcessCluster>(ShoalBinary());
    ASSERT_TRUE(security::CreateClientCert(
                    {.certs_dir = cluster_->certs_dir(), .user = kGuest, .overwrite = true})
                    .ok());
    ASSERT_TRUE(cluster_->StartCoordinator(2, 8).ok());
    for (uint32_t id = 1; id <= 2; ++id) ASSERT_TRUE(cluster_->StartNode(id).ok());
    Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    ExpectNoPasswordInLogs();
    cluster_.reset();
  }

  // `shoal ARGS [--cluster URI] SECURITY < stdin_file`: its exit status; stdout and stderr in
  // *out, and in a .out file of the test's directory (which the password check reads).
  int Cli(const std::string& args, const std::string& security, std::string* out,
          const std::string& stdin_file = "/dev/null", bool with_cluster = true) {
    const std::string out_path = fmt::format("{}/auth-cli-{}.out", cluster_->dir(), ++runs_);
    const std::string cluster = with_cluster ? "--cluster " + cluster_->uri() : std::string();
    const std::string command = fmt::format("{} {} {} {} < {} > {} 2>&1", ShoalBinary(), args,
                                            cluster, security, stdin_file, out_path);
    const int status = std::system(command.c_str());
    *out = ReadAll(out_path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int AdminCli(const std::string& args, std::string* out,
               const std::string& stdin_file = "/dev/null") {
    return Cli(args, "--certs-dir " + cluster_->certs_dir(), out, stdin_file);
  }

  // Adds `user` with `role` and a password (through stdin, never the command line).
  void AddUser(const std::string& user, const std::string& role, const std::string& password) {
    const std::string file = fmt::format("{}/{}.password", cluster_->dir(), user);
    WritePrivate(file, password + "\n");
    passwords_.push_back(password);
    std::string out;
    ASSERT_EQ(
        AdminCli(fmt::format("user add {} --role {} --password-stdin", user, role), &out, file), 0)
        << out;
    EXPECT_NE(out.find(user), std::string::npos) << out;
  }

  // A credentials file naming `user` with `password`, over the guest's certificate, written by
  // `shoal credentials add` (the password through stdin).
  std::string CredentialsFor(const std::string& user, const std::string& password) {
    const std::string path = fmt::format("{}/{}.credentials", cluster_->dir(), user);
    std::string flags = fmt::format("--user {} --cert-user {} --file {}", user, kGuest, path);
    std::string stdin_file = "/dev/null";
    if (!password.empty()) {
      stdin_file = fmt::format("{}/{}.credentials-password", cluster_->dir(), user);
      WritePrivate(stdin_file, password + "\n");
      flags += " --password-stdin";
    }
    std::string out;
    EXPECT_EQ(
        Cli("credentials add " + flags, "--certs-dir " + cluster_->certs_dir(), &out, stdin_file),
        0)
        << out;
    return path;
  }

  StatusOr<std::unique_ptr<Database>> ConnectAs(const std::string& credentials) {
    ConnectOptions options;
    options.credentials_file = credentials;
    return Database::Connect(cluster_->uri(), options);
  }

  // Whether the admin reads `key` of collection "docs" (it must not exist).
  void ExpectNotWritten(const std::string& key) {
    auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(db.ok()) << db.status();
    auto docs = (*db)->CreateCollection("docs");
    ASSERT_TRUE(docs.ok()) << docs.status();
    EXPECT_EQ(docs->Get(key).status().code(), StatusCode::kNotFound) << key;
  }

  // Every log and output of the test holds none of the passwords used.
  void ExpectNoPasswordInLogs() {
    std::error_code ec;
    int files = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(cluster_->dir(), ec)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() || !(name.ends_with(".log") || name.ends_with(".out"))) {
        continue;
      }
      ++files;
      const std::string text = ReadAll(entry.path().string());
      for (const auto& password : passwords_) {
        EXPECT_EQ(text.find(password), std::string::npos) << "a password in " << entry.path();
      }
    }
    EXPECT_GT(files, 3);
  }

  std::unique_ptr<ProcessCluster> cluster_;
  std::vector<std::string> passwords_;
  int runs_ = 0;
};

TEST_F(AuthClusterTest, NoCredentialsOrWrongPasswordIsUnauthenticatedAndWritesNothing) {
  ASSERT_NO_FATAL_FAILURE(AddUser("writer", "write", "writer-password-4dc1f"));
  passwords_.push_back("not-the-writer-password");
  for (const std::string& credentials :
       {CredentialsFor(kGuest, ""), CredentialsFor("writer", "not-the-writer-password"),
        CredentialsFor("nobody", "no-such-user-password")}) {
    auto db = ConnectAs(credentials);
    if (!db.ok()) {
      EXPECT_EQ(db.status().code(), StatusCode::kUnauthenticated) << db.status();
      continue;
    }
    auto docs = (*db)->GetCollection("docs");
    const Status put = docs.ok() ? docs->Insert("k-unauth", R"({"a": 1})").status() : docs.status();
    EXPECT_EQ(put.code(), StatusCode::kUnauthenticated) << put;
  }
  std::string out;
  EXPECT_NE(
      Cli("put docs k-unauth '{\"a\": 1}'", "--credentials " + CredentialsFor(kGuest, ""), &out),
      0);
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  ASSERT_NO_FATAL_FAILURE(ExpectNotWritten("k-unauth"));
  // An entry naming a user its certificate does not name, without a password, is refused: the
  // server would take the certificate's user.
  const std::string claimed = cluster_->dir() + "/claimed.credentials";
  EXPECT_NE(
      Cli(fmt::format("credentials add --user writer --cert-user {} --file {}", kGuest, claimed),
          "--certs-dir " + cluster_->certs_dir(), &out),
      0);
  EXPECT_NE(out.find("--password-stdin"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(claimed));
  // A user who signs in by password and has no certificate of its own is told both ways out.
  const std::string password_file = cluster_->dir() + "/writer.password";
  WritePrivate(password_file, "writer-password-4dc1f\n");
  EXPECT_NE(Cli(fmt::format("credentials add --user writer --password-stdin --file {}", claimed),
                "--certs-dir " + cluster_->certs_dir(), &out, password_file),
            0);
  EXPECT_NE(out.find("writer has no client certificate"), std::string::npos) << out;
  EXPECT_NE(out.find("shoal certs create-client"), std::string::npos) << out;
  EXPECT_NE(out.find("--cert-user NAME"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(claimed));
}

TEST_F(AuthClusterTest, ReadUserCannotWriteAndWriteUserCannotAdminister) {
  ASSERT_NO_FATAL_FAILURE(AddUser("reader", "read", "reader-password-81b2e"));
  ASSERT_NO_FATAL_FAILURE(AddUser("writer", "write", "writer-password-77a0c"));
  {
    auto admin = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(admin.ok());
    auto docs = (*admin)->CreateCollection("docs");
    ASSERT_TRUE(docs.ok()) << docs.status();
    ASSERT_TRUE(docs->Insert("seen", R"({"a": 1})").ok());
  }
  auto reader = ConnectAs(CredentialsFor("reader", "reader-password-81b2e"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto docs = (*reader)->GetCollection("docs");
  ASSERT_TRUE(docs.ok()) << docs.status();
  const auto seen = docs->Get("seen");
  EXPECT_TRUE(seen.ok()) << seen.status();
  const auto denied = docs->Insert("k-reader", R"({"a": 2})");
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied) << denied.status();
  EXPECT_NE(denied.status().message().find("write"), std::string_view::npos) << denied.status();
  ASSERT_NO_FATAL_FAILURE(ExpectNotWritten("k-reader"));

  auto writer = ConnectAs(CredentialsFor("writer", "writer-password-77a0c"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto written = (*writer)->GetCollection("docs");
  ASSERT_TRUE(written.ok());
  EXPECT_TRUE(written->Insert("k-writer", R"({"a": 3})").ok());

  const std::string as_writer =
      "--credentials " + CredentialsFor("writer", "writer-password-77a0c");
  std::string out;
  EXPECT_NE(Cli("add-node --id 3 --no-wait", as_writer, &out), 0);
  EXPECT_NE(out.find("PERMISSION_DENIED"), std::string::npos) << out;
  EXPECT_NE(out.find("admin"), std::string::npos) << out;
  // Failpoints are set at the process itself: the coordinator and a node both refuse.
  ASSERT_EQ(AdminCli("status --json", &out), 0) << out;
  const auto status = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(status.is_discarded()) << out;
  std::vector<std::string> targets = {cluster_->CoordinatorAddress(kCoordinator)};
  for (const auto& node : status["nodes"]) targets.push_back(node.value("address", ""));
  ASSERT_EQ(targets.size(), 3u) << out;
  for (const std::string& target : targets) {
    std::string failpoint;
    EXPECT_NE(Cli(fmt::format("failpoint --target {} x=crash", target), as_writer, &failpoint,
                  "/dev/null", /*with_cluster=*/false),
              0)
        << target;
    EXPECT_NE(failpoint.find("PERMISSION_DENIED"), std::string::npos) << failpoint;
  }
  // The admin still administers; the users list shows no hash.
  ASSERT_EQ(AdminCli("user list --json", &out), 0) << out;
  EXPECT_EQ(out.find("argon2"), std::string::npos) << out;
  EXPECT_NE(out.find("\"reader\""), std::string::npos) << out;
  // The last admin can be neither removed nor demoted, and stays an admin.
  EXPECT_NE(AdminCli("user remove admin", &out), 0);
  EXPECT_NE(out.find("last admin"), std::string::npos) << out;
  EXPECT_NE(AdminCli("user grant admin --role read", &out), 0);
  EXPECT_NE(out.find("FAILED_PRECONDITION"), std::string::npos) << out;
  ASSERT_EQ(AdminCli("user list --json", &out), 0) << out;
  const auto users = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(users.is_object() && users.contains("users")) << out;
  int admins = 0;
  for (const auto& user : users["users"]) {
    if (user.value("name", "") == "admin" && user.value("role", "") == "admin") ++admins;
  }
  EXPECT_EQ(admins, 1) << out;
}

// Guessing a password from one address (every client here is 127.0.0.1): past the limit the
// coordinator refuses that address's password attempts with the limit and when to retry, a
// right password too, and logs the throttle once; a certificate user from the same address, and
// the right password at another process (each counts its own failures), are unaffected; the
// guesses changed nothing.
// A read user reads a collection no writer has written through the client library yet, so that
// no collection has sharded fields and their system collection does not exist: the read needs no
// schema and creates nothing (a read user may not create a collection).
TEST_F(AuthClusterTest, ReadUserReadsACollectionNoWriterTouched) {
  ASSERT_NO_FATAL_FAILURE(AddUser("fresh-reader", "read", "fresh-reader-password-3c9d1"));
  {
    auto admin = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(admin.ok());
    auto created = (*admin)->CreateCollection("untouched");
    ASSERT_TRUE(created.ok()) << created.status();
  }
  auto reader = ConnectAs(CredentialsFor("fresh-reader", "fresh-reader-password-3c9d1"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto untouched = (*reader)->GetCollection("untouched");
  ASSERT_TRUE(untouched.ok()) << untouched.status();
  const auto missing = untouched->Get("nothing-here");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status();
}

TEST_F(AuthClusterTest, WrongPasswordsFromOneAddressAreThrottled) {
  ASSERT_NO_FATAL_FAILURE(AddUser("victim", "write", "victim-password-5a7c3"));
  passwords_.push_back("victim-guess-0001");
  const auto runtime_as = [&](const std::string& password) {
    security::TlsFiles files = security::ClientTlsFiles(cluster_->certs_dir(), kGuest);
    files.user = "victim";
    files.password = password;
    auto runtime = net::GrpcRuntime::Start(
        {.coordinator = cluster_->coordinators(), .security = {.tls = files}});
    EXPECT_TRUE(runtime.ok()) << runtime.status();
    return std::move(runtime).value();
  };
  const auto create = [](net::GrpcRuntime& runtime) {
    return runtime
        .Call(transport::Address::Coordinator(),
              transport::Request(transport::CreateCollectionRequest{.name = "guessed"}), 2'000'000)
        .status();
  };
  auto guesser = runtime_as("victim-guess-0001");
  for (uint32_t i = 0; i < security::kDefaultMaxFailuresPerAddress; ++i) {
    const Status refused = create(*guesser);
    ASSERT_EQ(refused.code(), StatusCode::kUnauthenticated) << refused;
    EXPECT_NE(refused.message().find("wrong user or password"), std::string_view::npos) << refused;
  }
  for (int i = 0; i < 3; ++i) {
    const Status throttled = create(*guesser);
    EXPECT_EQ(throttled.code(), StatusCode::kUnauthenticated) << throttled;
    EXPECT_NE(throttled.message().find(fmt::format(
                  "too many failed password attempts from client address 127.0.0.1: the limit "
                  "is {} per 60 s",
                  security::kDefaultMaxFailuresPerAddress)),
              std::string_view::npos)
        << throttled;
    EXPECT_NE(throttled.message().find("retry in"), std::string_view::npos) << throttled;
  }
  // The right password from the throttled address waits for the backoff too.
  auto victim = runtime_as("victim-password-5a7c3");
  const Status right = create(*victim);
  EXPECT_EQ(right.code(), StatusCode::kUnauthenticated) << right;
  EXPECT_NE(right.message().find("too many failed password attempts"), std::string_view::npos)
      << right;
  // Another process counts its own failures: the right password works at a node.
  const auto known_by = Clock::now() + std::chrono::seconds(10);
  StatusOr<transport::Response> at_node = UnavailableError("not asked yet");
  while (Clock::now() < known_by) {
    at_node =
        victim->Call(transport::Address::Node(NodeId(1)),
                     transport::Request(transport::GetRequest{.primary_key = "k"}), 2'000'000);
    if (at_node.status().code() != StatusCode::kUnauthenticated) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(at_node.status().code(), StatusCode::kUnauthenticated) << at_node.status();

  // A certificate user from the same address is not throttled, and nothing was created.
  auto admin = Database::Connect(cluster_->uri(), cluster_->connect_options());
  ASSERT_TRUE(admin.ok()) << admin.status();
  auto guessed = (*admin)->GetCollection("guessed");
  ASSERT_TRUE(guessed.ok()) << guessed.status();
  const Status unknown = guessed->Get("k").status();
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound) << unknown;
  EXPECT_NE(unknown.message().find("no collection named"), std::string_view::npos) << unknown;
  std::string out;
  EXPECT_EQ(AdminCli("status", &out), 0) << out;
  ASSERT_NO_FATAL_FAILURE(ExpectNotWritten("k-guessed"));

  EXPECT_TRUE(cluster_->LogShows(kCoordinator, "auth.throttled"));
  size_t throttles = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cluster_->dir(), ec)) {
    if (entry.path().extension() != ".log") continue;
    const std::string log = ReadAll(entry.path().string());
    for (size_t at = log.find("auth.throttled"); at != std::string::npos;
         at = log.find("auth.throttled", at + 1)) {
      ++throttles;
    }
  }
  EXPECT_EQ(throttles, 1u) << "one warning per address and block, at the coordinator only";
}

TEST_F(AuthClusterTest, RemovedUserIsRefusedByEveryProcessWithinTheBound) {
  ASSERT_NO_FATAL_FAILURE(AddUser("leaving", "write", "leaving-password-3e9d1"));
  security::TlsFiles files = security::ClientTlsFiles(cluster_->certs_dir(), kGuest);
  files.user = "leaving";
  files.password = "leaving-password-3e9d1";
  auto runtime = net::GrpcRuntime::Start(
      {.coordinator = cluster_->coordinators(), .security = {.tls = files}});
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  const std::vector<transport::Address> processes = {transport::Address::Coordinator(),
                                                     transport::Address::Node(NodeId(1)),
                                                     transport::Address::Node(NodeId(2))};
  // Whether `to` refuses the user: any answer but UNAUTHENTICATED means it was let in.
  const auto refused = [&](const transport::Address& to) {
    transport::Request request =
        to == transport::Address::Coordinator()
            ? transport::Request(transport::GetMapRequest{})
            : transport::Request(transport::GetRequest{.primary_key = "k"});
    auto answer = (*runtime)->Call(to, std::move(request), 2'000'000);
    return !answer.ok() && answer.status().code() == StatusCode::kUnauthenticated;
  };
  // Every process knows the user (a node learns it within its poll).
  const auto known_by = Clock::now() + std::chrono::seconds(10);
  for (const auto& to : processes) {
    while (refused(to) && Clock::now() < known_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_FALSE(refused(to)) << to.DebugString();
  }

  std::string out;
  const auto removed_at = Clock::now();
  ASSERT_EQ(AdminCli("user remove leaving", &out), 0) << out;
  std::vector<double> seconds(processes.size(), -1);
  size_t left = processes.size();
  while (left > 0 && Clock::now() - removed_at < 2 * kRevocationBound) {
    for (size_t i = 0; i < processes.size(); ++i) {
      if (seconds[i] >= 0 || !refused(processes[i])) continue;
      seconds[i] = std::chrono::duration<double>(Clock::now() - removed_at).count();
      --left;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    std::printf("removed user refused by %s after %.3f s\n", processes[i].DebugString().c_str(),
                seconds[i]);
    EXPECT_GE(seconds[i], 0) << processes[i].DebugString() << " still lets the user in";
    EXPECT_LE(seconds[i], std::chrono::duration<double>(kRevocationBound).count())
        << processes[i].DebugString();
  }
}

}  // namespace
}  // namespace shoal::cluster_test
