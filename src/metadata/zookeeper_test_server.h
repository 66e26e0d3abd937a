#pragma once

// ZooKeeperTestServer: a ZooKeeper server (from the Debian zookeeper package) run by a test as a
// child process, on free loopback ports, with its data in a fresh temporary directory: either
// standalone (Start) or one member of a ZooKeeperTestEnsemble. The destructor kills the server
// and removes the directory; the child is also killed if the test process dies
// (PR_SET_PDEATHSIG). A test may Kill the server (SIGKILL) and Restart it on the same ports and
// data directory: what it committed before the kill is there again (ZooKeeper logs each
// transaction before acknowledging it), and sessions that reconnect within their timeout of the
// restart live on. A server counts as started once it serves: the `srvr` four-letter word
// reports its mode (standalone, leader or follower), which a quorum member only does while it is
// part of a quorum. Not thread-safe.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "src/common/status.h"

namespace shoal::metadata {

class ZooKeeperTestServer {
 public:
  // FailedPrecondition naming the package if the server is not installed; Unavailable if it did
  // not serve within 60 s (the message holds the end of its log).
  [[nodiscard]] static StatusOr<std::unique_ptr<ZooKeeperTestServer>> Start();
  ~ZooKeeperTestServer();

  ZooKeeperTestServer(const ZooKeeperTestServer&) = delete;
  ZooKeeperTestServer& operator=(const ZooKeeperTestServer&) = delete;

  // "127.0.0.1:PORT", for ZooKeeperMetadataOptions::hosts.
  [[nodiscard]] std::string hosts() const;
  // SIGKILL, then waits for the process to end. Idempotent.
  void Kill();
  // SIGSTOP / SIGCONT: a server that stops answering without closing its connections; its
  // sessions whose clients could not reach it for their timeout expire once it runs again.
  void Pause();
  void Resume();
  // Starts the killed server again on its ports and data directory, until it serves (a quorum
  // member: until it rejoined the quorum). FailedPrecondition while it runs; Unavailable as Start.
  [[nodiscard]] Status Restart();
  [[nodiscard]] bool running() const { return pid_ > 0; }
  // What `srvr` reports as "Mode:" ("standalone", "leader" or "follower"); Unavailable while the
  // server does not serve.
  [[nodiscard]] StatusOr<std::string> Mode() const;

 private:
  friend class ZooKeeperTestEnsemble;

  ZooKeeperTestServer() = default;
  // Finds the jars, creates the directory and picks the client port.
  [[nodiscard]] static StatusOr<std::unique_ptr<ZooKeeperTestServer>> Create();
  // Starts the server process on the written configuration, without waiting.
  [[nodiscard]] Status Spawn();
  // Until it serves, the process ended, or `seconds` passed.
  [[nodiscard]] Status WaitServing(int seconds);
  [[nodiscard]] std::string LogTail() const;

  std::string classpath_;
  // ZooKeeperServerMain (standalone) or QuorumPeerMain (an ensemble member).
  std::string main_class_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

// ZooKeeperTestEnsemble: `size` ZooKeeperTestServers forming one ZooKeeper ensemble on loopback
// (each with its own data directory and myid, client port, and quorum and election ports), with
// a short tick so that a new leader is elected within about a second of the old one's death.
// A test kills and restarts members through member(i); the ensemble serves while a majority
// runs. Not thread-safe.
class ZooKeeperTestEnsemble {
 public:
  // Members beyond this would only slow the tests down.
  static constexpr int kMaxMembers = 5;

  // InvalidArgument unless 1 <= size <= kMaxMembers; otherwise as ZooKeeperTestServer::Start
  // (each member has 120 s to serve: the members start at once and wait for a quorum).
  [[nodiscard]] static StatusOr<std::unique_ptr<ZooKeeperTestEnsemble>> Start(int size);

  // "127.0.0.1:P1,127.0.0.1:P2,...", for ZooKeeperMetadataOptions::hosts and zk:// URIs.
  [[nodiscard]] std::string hosts() const;
  [[nodiscard]] int size() const { return static_cast<int>(members_.size()); }
  // Member `index` (0-based; its ZooKeeper myid is index + 1).
  [[nodiscard]] ZooKeeperTestServer& member(int index) {
    return *members_.at(static_cast<size_t>(index));
  }
  // The index of the member that reports itself the quorum's leader; NotFound if none does now
  // (an election is under way).
  [[nodiscard]] StatusOr<int> Leader() const;

 private:
  ZooKeeperTestEnsemble() = default;

  std::vector<std::unique_ptr<ZooKeeperTestServer>> members_;
};

}  // namespace shoal::metadata
