#pragma once

// PostgresTestServer: a throwaway PostgreSQL server for tests, started from the test itself:
// initdb into a fresh temp directory, pg_ctl start on a free loopback port with the socket in
// that directory, pg_ctl stop and removal on destruction. PostgreSQL refuses to run as root, so
// as root the directory is handed to the `postgres` user and the binaries run through
// `runuser -u postgres --`. Parallel tests never collide: each server has its own directory and
// port (a port taken between probing and binding makes Start retry with another).
//
// By default the server trades durability for speed (fsync, synchronous_commit and
// full_page_writes off: tests need no crash safety). `durable` keeps PostgreSQL's defaults, so
// that every commit waits for its WAL flush, as a production server does (benchmarks).
//
// The binaries come from $SHOAL_PG_BIN, else /usr/lib/postgresql/15/bin. Missing binaries are
// an error (kFailedPrecondition, naming the directory): a test must fail, never skip.

#include <memory>
#include <string>

#include "src/common/status.h"

namespace shoal::clientside::testing {

struct PostgresTestServerOptions {
  bool durable = false;
};

class PostgresTestServer {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<PostgresTestServer>> Start(
      PostgresTestServerOptions options = {.durable = false});
  ~PostgresTestServer();
  PostgresTestServer(const PostgresTestServer&) = delete;
  PostgresTestServer& operator=(const PostgresTestServer&) = delete;

  // libpq connection string for the `postgres` database.
  [[nodiscard]] std::string conninfo() const;
  [[nodiscard]] int port() const { return port_; }

 private:
  PostgresTestServer() = default;
  [[nodiscard]] Status Run(const std::string& command) const;

  std::string bin_;
  std::string dir_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace shoal::clientside::testing
