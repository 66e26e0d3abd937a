#include "tests/cluster/local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

// The process group of the running `shoal local` (0: none), for the emergency cleanup.
std::atomic<pid_t> g_local_group{0};

// On a crash or a termination signal, the processes of shoal local die with the test: woken, so
// that none is left stopped, then killed. Async-signal-safe.
void KillGroupAndReraise(int signal) {
  const pid_t group = g_local_group.load();
  if (group > 0) {
    ::kill(-group, SIGCONT);
    ::kill(-group, SIGKILL);
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

// A free TCP port on loopback with the next `count - 1` free too (the coordinator and its nodes
// listen on base, base + 1, ...); 0 if 100 draws found none. Another process may take one before
// shoal local binds it; the start then fails and is retried on other ports.
int FreeBasePort(Random& random, int count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int base = 20000 + static_cast<int>(random.Uniform(40000));
    bool free = true;
    for (int port = base; free && port < base + count; ++port) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address = {};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<uint16_t>(port));
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
      ::close(fd);
    }
    if (free) return base;
  }
  return 0;
}

// The whole file, or "" if it cannot be read (a /proc entry whose process has gone).
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

void InstallEmergencyCleanup() {
  for (int signal : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction action = {};
    action.sa_handler = KillGroupAndReraise;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, nullptr);
  }
}

LocalCluster::LocalCluster(std::string binary, std::string dir, Options options)
    : binary_(std::move(binary)), dir_(std::move(dir)), options_(options) {}

LocalCluster::~LocalCluster() { Stop(); }

Status LocalCluster::Start(Random& random) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int base = FreeBasePort(random, static_cast<int>(options_.nodes) + 1);
    if (base == 0) return InternalError("no free ports");
    std::filesystem::remove_all(data_dir());
    Status started = Launch(base);
    if (started.ok()) return started;
    fmt::print("[ history ] shoal local on port {} did not start ({}); once more\n", base,
               started.ToString());
    Stop();
  }
  return InternalError(fmt::format("shoal local did not start:\n{}", Output()));
}

void LocalCluster::Stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  const auto until = Clock::now() + std::chrono::seconds(20);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Whatever outlived it (or shoal local itself, if it hung).
  ::kill(-pid_, SIGCONT);
  ::kill(-pid_, SIGKILL);
  (void)::waitpid(pid_, &status, 0);
  g_local_group.store(0);
  pid_ = 0;
}

pid_t LocalCluster::NodePid(uint32_t id) const {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string stat = ReadFile(entry.path() / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid != pid_ || state == 'Z') continue;
    const std::string cmdline = ReadFile(entry.path() / "cmdline");
    std::vector<std::string> args;
    for (size_t begin = 0; begin < cmdline.size();) {
      const size_t end = cmdline.find('\0', begin);
      args.push_back(cmdline.substr(begin, end - begin));
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    if (args.size() >= 4 && args[1] == "node" && args[2] == "--id" &&
        args[3] == std::to_string(id)) {
      return std::stoi(name);
    }
  }
  return 0;
}

std::optional<nlohmann::json> LocalCluster::StatusJson() const {
  const std::string command =
      fmt::format("SHOAL_CREDENTIALS='{}' '{}' status --json --cluster '{}' 2>/dev/null",
                  credentials_file(), binary_, uri_);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  if (::pclose(pipe) != 0) return std::nullopt;
  auto json = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::nullopt;
  return json;
}

bool LocalCluster::Healthy() const {
  for (uint32_t id = 1; id <= options_.nodes; ++id) {
    if (NodePid(id) == 0) return false;
  }
  const auto status = StatusJson();
  return status.has_value() && status->value("primary_unreachable_buckets", -1) == 0 &&
         status->value("under_replicated_buckets", -1) == 0 &&
         status->value("below_min_in_sync_buckets", -1) == 0;
}

std::string LocalCluster::Output() const { return ReadFile(dir_ + "/local.out"); }

Status LocalCluster::Launch(int base) {
  const std::vector<std::string> args = {binary_,
                                         "local",
                                         "--nodes",
                                         std::to_string(options_.nodes),
                                         "--replicas",
                                         std::to_string(options_.replicas),
                                         "--buckets",
                                         std::to_string(options_.buckets),
                                         "--base-port",
                                         std::to_string(base),
                                         "--data",
                                         data_dir(),
                                         "--restart-delay-ms",
                                         std::to_string(options_.restart_delay_ms),
                                         "--json"};
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // Ours, with SHOAL_CREDENTIALS naming the test's own file (never the user's).
  const std::string credentials = "SHOAL_CREDENTIALS=" + credentials_file();
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, 18) != "SHOAL_CREDENTIALS=") envp.push_back(*e);
  }
  envp.push_back(const_cast<char*>(credentials.c_str()));
  envp.push_back(nullptr);
  const std::string out = dir_ + "/local.out";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) ::_exit(127);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(binary_.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that no signal to the group can precede the child's
  pid_ = pid;
  g_local_group.store(pid);
  // shoal local prints one JSON line once the cluster serves (or gave up after 20 s).
  const auto until = Clock::now() + std::chrono::seconds(40);
  while (Clock::now() < until) {
    std::istringstream lines(Output());
    for (std::string line; std::getline(lines, line);) {
      auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (json.is_discarded() || !json.is_object() || !json.contains("cluster")) continue;
      if (!json.value("serving", false)) return InternalError("not serving");
      uri_ = json["cluster"].get<std::string>();
      return OkStatus();
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      g_local_group.store(0);
      return InternalError(fmt::format("exited: {}", Output()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return InternalError("no ready line after 40 s");
}

}  // namespace shoal::cluster_test
