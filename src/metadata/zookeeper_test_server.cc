#include "src/metadata/zookeeper_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

namespace shoal::metadata {
namespace {

constexpr const char* kJarDir = "/usr/share/java";
// The jars ZooKeeperServerMain and QuorumPeerMain need, as the Debian zookeeper package installs
// them.
constexpr const char* kJars[] = {"zookeeper.jar",
                                 "zookeeper-jute.jar",
                                 "slf4j-api.jar",
                                 "slf4j-simple.jar",
                                 "netty-handler.jar",
                                 "netty-common.jar",
                                 "netty-buffer.jar",
                                 "netty-transport.jar",
                                 "netty-codec.jar",
                                 "netty-resolver.jar",
                                 "netty-transport-native-epoll.jar",
                                 "netty-transport-native-unix-common.jar",
                                 "metrics-core.jar",
                                 "snappy-java.jar"};

// A port nobody listens on now: bound to port 0, read back, released. Never one it returned
// before in this process, so that the ports of one ensemble differ (called from one thread).
StatusOr<int> FreeLoopbackPort() {
  static std::set<int>* const given = new std::set<int>;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return InternalError("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    close(fd);
    if (!ok) return InternalError("cannot find a free loopback port");
    const int port = ntohs(addr.sin_port);
    if (given->insert(port).second) return port;
  }
  return InternalError("no new free loopback port in 100 attempts");
}

// The answer of the server on `port` to a four-letter word, read to its end; empty if it does
// not answer (down, or the word is not whitelisted).
std::string FourLetterWord(int port, std::string_view word) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  // A member that hangs must not hang the test: give up on a read after 2 s.
  timeval timeout{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      write(fd, word.data(), word.size()) == static_cast<ssize_t>(word.size())) {
    char buffer[1024];
    ssize_t n = 0;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

// The "Mode: X" line of a `srvr` answer: X, or empty when absent (the server does not serve).
std::string ModeOf(const std::string& srvr) {
  constexpr std::string_view kMode = "Mode: ";
  const size_t at = srvr.find(kMode);
  if (at == std::string::npos) return {};
  const size_t begin = at + kMode.size();
  const size_t end = srvr.find('\n', begin);
  return srvr.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The lines of a server's configuration shared by standalone servers and ensemble members. A
// short tick allows session timeouts from 400 ms, so session-loss tests run fast.
std::string CommonConfig(const std::string& dir, int client_port) {
  return fmt::format(
      "tickTime=200\n"
      "dataDir={}/data\n"
      "clientPort={}\n"
      "clientPortAddress=127.0.0.1\n"
      "maxSessionTimeout=60000\n"
      "maxClientCnxns=0\n"
      "admin.enableServer=false\n"
      "4lw.commands.whitelist=srvr\n",
      dir, client_port);
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return IoError(fmt::format("cannot write {}", path));
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<ZooKeeperTestServer>> ZooKeeperTestServer::Create() {
  std::string classpath;
  for (const char* jar : kJars) {
    const std::string path = fmt::format("{}/{}", kJarDir, jar);
    if (!std::filesystem::exists(path)) {
      return FailedPreconditionError(fmt::format(
          "ZooKeeper server not installed: {} is missing (Debian packages zookeeper and "
          "libslf4j-java; run scripts/install-deps.sh)",
          path));
    }
    if (!classpath.empty()) classpath += ':';
    classpath += path;
  }
  std::unique_ptr<ZooKeeperTestServer> server(new ZooKeeperTestServer);
  std::string pattern = (std::filesystem::temp_directory_path() / "shoal-zk-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return InternalError("mkdtemp failed");
  server->dir_ = pattern;
  std::error_code ec;
  std::filesystem::create_directories(server->dir_ + "/data", ec);
  if (ec) return IoError(fmt::format("create {}/data: {}", server->dir_, ec.message()));
  SHOAL_ASSIGN_OR_RETURN(server->port_, FreeLoopbackPort());
  server->classpath_ = std::move(classpath);
  return server;
}

StatusOr<std::unique_ptr<ZooKeeperTestServer>> ZooKeeperTestServer::Start() {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ZooKeeperTestServer> server, Create());
  server->main_class_ = "org.apache.zookeeper.server.ZooKeeperServerMain";
  SHOAL_RETURN_IF_ERROR(
      WriteFile(server->dir_ + "/zoo.cfg", CommonConfig(server->dir_, server->port_)));
  SHOAL_RETURN_IF_ERROR(server->Spawn());
  SHOAL_RETURN_IF_ERROR(server->WaitServing(60));
  return server;
}

Status ZooKeeperTestServer::Spawn() {
  const std::string log = dir_ + "/server.log";
  const std::string config = dir_ + "/zoo.cfg";
  std::vector<std::string> args = {
      "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
      "-cp",  classpath_, main_class_,        config};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return InternalError("fork failed");
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    // Appended: a restarted server's log follows the killed one's.
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execvp("java", argv.data());
    _exit(127);
  }
  pid_ = pid;
  return OkStatus();
}

Status ZooKeeperTestServer::WaitServing(int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (ModeOf(FourLetterWord(port_, "srvr")).empty()) {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return UnavailableError(
          fmt::format("ZooKeeper server exited at start (is java installed?): {}", LogTail()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return UnavailableError(
          fmt::format("ZooKeeper server did not serve in {} s: {}", seconds, LogTail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return OkStatus();
}

StatusOr<std::string> ZooKeeperTestServer::Mode() const {
  std::string mode = pid_ > 0 ? ModeOf(FourLetterWord(port_, "srvr")) : std::string();
  if (mode.empty()) return UnavailableError(fmt::format("ZooKeeper at {} does not serve", hosts()));
  return mode;
}

void ZooKeeperTestServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ZooKeeperTestServer::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void ZooKeeperTestServer::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

Status ZooKeeperTestServer::Restart() {
  if (pid_ > 0) return FailedPreconditionError("the ZooKeeper server is running");
  // The port may linger in TIME_WAIT for a moment: ZooKeeper binds with SO_REUSEADDR, but retry
  // a start that failed anyway.
  Status status;
  for (int attempt = 0; attempt < 5; ++attempt) {
    status = Spawn();
    if (status.ok()) status = WaitServing(60);
    if (status.ok()) return status;
    Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return status;
}

ZooKeeperTestServer::~ZooKeeperTestServer() {
  Kill();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string ZooKeeperTestServer::hosts() const { return fmt::format("127.0.0.1:{}", port_); }

std::string ZooKeeperTestServer::LogTail() const {
  std::ifstream in(dir_ + "/server.log");
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

StatusOr<std::unique_ptr<ZooKeeperTestEnsemble>> ZooKeeperTestEnsemble::Start(int size) {
  if (size < 1 || size > kMaxMembers) {
    return InvalidArgumentError(
        fmt::format("a test ensemble has 1 to {} members, not {}", kMaxMembers, size));
  }
  std::unique_ptr<ZooKeeperTestEnsemble> ensemble(new ZooKeeperTestEnsemble);
  // server.N=127.0.0.1:QUORUM_PORT:ELECTION_PORT, the same in every member's configuration.
  std::string servers;
  for (int i = 0; i < size; ++i) {
    SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ZooKeeperTestServer> member,
                           ZooKeeperTestServer::Create());
    member->main_class_ = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
    SHOAL_ASSIGN_OR_RETURN(const int quorum_port, FreeLoopbackPort());
    SHOAL_ASSIGN_OR_RETURN(const int election_port, FreeLoopbackPort());
    servers += fmt::format("server.{}=127.0.0.1:{}:{}\n", i + 1, quorum_port, election_port);
    SHOAL_RETURN_IF_ERROR(WriteFile(member->dir_ + "/data/myid", fmt::format("{}\n", i + 1)));
    ensemble->members_.push_back(std::move(member));
  }
  for (auto& member : ensemble->members_) {
    // initLimit and syncLimit in ticks: 5 s to join, 2 s of silence before a follower is
    // dropped (generous for a loaded machine; a killed leader is noticed at once anyway, by
    // its closed connections).
    SHOAL_RETURN_IF_ERROR(WriteFile(
        member->dir_ + "/zoo.cfg",
        CommonConfig(member->dir_, member->port_) + "initLimit=25\nsyncLimit=10\n" + servers));
  }
  // All at once: none serves before a majority runs.
  for (auto& member : ensemble->members_) SHOAL_RETURN_IF_ERROR(member->Spawn());
  for (auto& member : ensemble->members_) SHOAL_RETURN_IF_ERROR(member->WaitServing(120));
  return ensemble;
}

std::string ZooKeeperTestEnsemble::hosts() const {
  std::string hosts;
  for (const auto& member : members_) {
    if (!hosts.empty()) hosts += ',';
    hosts += member->hosts();
  }
  return hosts;
}

StatusOr<int> ZooKeeperTestEnsemble::Leader() const {
  for (int i = 0; i < size(); ++i) {
    auto mode = members_[static_cast<size_t>(i)]->Mode();
    if (mode.ok() && *mode == "leader") return i;
  }
  return NotFoundError("no member of the ensemble leads now");
}

}  // namespace shoal::metadata
