#pragma once

// ZooKeeperTestServer: a standalone ZooKeeper server (from the Debian zookeeper package) run by a
// test as a child process, on a free loopback port, with its data in a fresh temporary directory.
// The destructor kills the server and removes the directory; the child is also killed if the test
// process dies (PR_SET_PDEATHSIG). A test may Kill the server (SIGKILL) and Restart it on the same
// port and data directory: what it committed before the kill is there again (ZooKeeper logs each
// transaction before acknowledging it), and sessions that reconnect within their timeout of the
// restart live on. Not thread-safe.

#include <sys/types.h>

#include <memory>
#include <string>

#include "src/common/status.h"

namespace shoal::metadata {

class ZooKeeperTestServer {
 public:
  // FailedPrecondition naming the package if the server is not installed; Unavailable if it did
  // not answer within 60 s (the message holds the end of its log).
  [[nodiscard]] static StatusOr<std::unique_ptr<ZooKeeperTestServer>> Start();
  ~ZooKeeperTestServer();

  ZooKeeperTestServer(const ZooKeeperTestServer&) = delete;
  ZooKeeperTestServer& operator=(const ZooKeeperTestServer&) = delete;

  // "127.0.0.1:PORT", for ZooKeeperMetadataOptions::hosts.
  [[nodiscard]] std::string hosts() const;
  // SIGKILL, then waits for the process to end. Idempotent.
  void Kill();
  // Starts the killed server again on its port and data directory, until it answers.
  // FailedPrecondition while it runs; Unavailable as Start.
  [[nodiscard]] Status Restart();

 private:
  ZooKeeperTestServer() = default;
  // Starts the server process on the written configuration and waits until it answers.
  [[nodiscard]] Status Launch();
  [[nodiscard]] std::string LogTail() const;

  std::string classpath_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace shoal::metadata
