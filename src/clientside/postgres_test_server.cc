#include "src/clientside/postgres_test_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace shoal::clientside::testing {

namespace {

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

Status PostgresTestServer::Run(const std::string& command) const {
  std::string full = command;
  if (geteuid() == 0) full = "runuser -u postgres -- " + command;
  full += fmt::format(" >>{}/commands.log 2>&1", dir_);
  const int rc = std::system(full.c_str());
  if (rc != 0) {
    return InternalError(
        fmt::format("`{}` failed with {} (see {}/commands.log)", command, rc, dir_));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<PostgresTestServer>> PostgresTestServer::Start(
    PostgresTestServerOptions options) {
  std::unique_ptr<PostgresTestServer> server(new PostgresTestServer());
  const char* bin = std::getenv("SHOAL_PG_BIN");
  server->bin_ = bin != nullptr ? bin : "/usr/lib/postgresql/15/bin";
  for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
    if (!std::filesystem::exists(std::filesystem::path(server->bin_) / tool)) {
      return FailedPreconditionError(fmt::format(
          "PostgreSQL binaries not found: {}/{} is missing (install the `postgresql` package with "
          "scripts/install-deps.sh, or set SHOAL_PG_BIN)",
          server->bin_, tool));
    }
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "shoal-pg-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return InternalError("mkdtemp failed");
  server->dir_ = pattern;
  if (geteuid() == 0) {
    passwd* pw = getpwnam("postgres");
    if (pw == nullptr) {
      return FailedPreconditionError("running as root needs a `postgres` user to run PostgreSQL");
    }
    if (chown(server->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return InternalError("chown of the PostgreSQL test directory failed");
    }
  }
  const std::string data = server->dir_ + "/data";
  SHOAL_RETURN_IF_ERROR(server->Run(fmt::format(
      "{}/initdb -D {} -A trust -U postgres -E UTF8 --locale=C --no-sync", server->bin_, data)));
  const std::string durability =
      options.durable ? "-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
                      : "-c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  Status started;
  for (int attempt = 0; attempt < 5; ++attempt) {
    server->port_ = FreeLoopbackPort();
    started = server->Run(fmt::format(
        "{}/pg_ctl -D {} -l {}/server.log -w -t 60 -o \"-p {} -k {} -c listen_addresses=127.0.0.1 "
        "{} -c max_connections=300\" start",
        server->bin_, data, server->dir_, server->port_, server->dir_, durability));
    if (started.ok()) break;
  }
  SHOAL_RETURN_IF_ERROR(started);
  server->started_ = true;
  return server;
}

PostgresTestServer::~PostgresTestServer() {
  if (started_) {
    Status ignored = Run(fmt::format("{}/pg_ctl -D {}/data -m immediate -w stop", bin_, dir_));
    (void)ignored;
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string PostgresTestServer::conninfo() const {
  return fmt::format("host=127.0.0.1 port={} user=postgres dbname=postgres", port_);
}

}  // namespace shoal::clientside::testing
