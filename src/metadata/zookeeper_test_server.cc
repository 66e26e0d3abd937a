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
#include <sstream>
#include <thread>
#include <vector>

namespace shoal::metadata {
namespace {

constexpr const char* kJarDir = "/usr/share/java";
// The jars ZooKeeperServerMain needs, as the Debian zookeeper package installs them.
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

// A port nobody listens on now: bound to port 0, read back, released.
StatusOr<int> FreeLoopbackPort() {
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
  return static_cast<int>(ntohs(addr.sin_port));
}

// True once the server answers the "ruok" four-letter command with "imok".
bool Answers(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      write(fd, "ruok", 4) == 4) {
    char reply[4] = {};
    ok = read(fd, reply, sizeof(reply)) == 4 && std::string_view(reply, 4) == "imok";
  }
  close(fd);
  return ok;
}

}  // namespace

StatusOr<std::unique_ptr<ZooKeeperTestServer>> ZooKeeperTestServer::Start() {
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
  SHOAL_ASSIGN_OR_RETURN(server->port_, FreeLoopbackPort());
  const std::string config = server->dir_ + "/zoo.cfg";
  {
    std::ofstream out(config);
    // A short tick allows session timeouts from 400 ms, so session-loss tests run fast.
    out << "tickTime=200\n"
        << "dataDir=" << server->dir_ << "/data\n"
        << "clientPort=" << server->port_ << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "maxSessionTimeout=60000\n"
        << "maxClientCnxns=0\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=ruok\n";
  }
  server->classpath_ = std::move(classpath);
  SHOAL_RETURN_IF_ERROR(server->Launch());
  return server;
}

Status ZooKeeperTestServer::Launch() {
  const std::string log = dir_ + "/server.log";
  const std::string config = dir_ + "/zoo.cfg";
  std::vector<std::string> args = {"java",
                                   "-Xmx256m",
                                   "-XX:+UseSerialGC",
                                   "-XX:TieredStopAtLevel=1",
                                   "-cp",
                                   classpath_,
                                   "org.apache.zookeeper.server.ZooKeeperServerMain",
                                   config};
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!Answers(port_)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid_ = -1;
      return UnavailableError(
          fmt::format("ZooKeeper server exited at start (is java installed?): {}", LogTail()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return UnavailableError(
          fmt::format("ZooKeeper server did not answer in 60 s: {}", LogTail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return OkStatus();
}

void ZooKeeperTestServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

Status ZooKeeperTestServer::Restart() {
  if (pid_ > 0) return FailedPreconditionError("the ZooKeeper server is running");
  // The port may linger in TIME_WAIT for a moment: ZooKeeper binds with SO_REUSEADDR, but retry
  // a start that failed anyway.
  Status status;
  for (int attempt = 0; attempt < 5; ++attempt) {
    status = Launch();
    if (status.ok()) return status;
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

}  // namespace shoal::metadata
