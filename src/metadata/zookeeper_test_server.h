#pragma once

// ZooKeeperTestServer: a standalone ZooKeeper server (from the Debian zookeeper package) run by a
// test as a child process, on a free loopback port, with its data in a fresh temporary directory.
// The destructor kills the server and removes the directory; the child is also killed if the test
// process dies (PR_SET_PDEATHSIG). Not thread-safe.

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

 private:
  ZooKeeperTestServer() = default;
  [[nodiscard]] std::string LogTail() const;

  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace shoal::metadata
