// tls_resume: what a reconnection costs over mutual TLS with session resumption against a full
// handshake (docs/results/security.md, "Reconnections: session resumption"). One process: a
// GrpcRuntime server over TLS with a node certificate on loopback, and a client that, N times
// per arm, creates a channel of its own (a new connection), makes one Resolve call and drops
// it. The arms take turns call by call, the order rotating every turn: "resumed" channels share
// the process's session cache of the server's address (resume_sessions), "full"
// channels have none, and "plaintext" channels go to a second server without TLS (--insecure),
// for what the rest of a reconnection costs. Each reconnection's wall time runs from the
// channel's creation to the call's answer (TCP connect, TLS handshake, HTTP/2 preface, one
// call); the process's CPU time (both sides) is summed per arm.
//
//   tls_resume --reconnections 200

#include <fmt/format.h>
#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "proto/shoal.grpc.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/tls_credentials.h"
#include "src/security/certificates.h"

namespace {

using Clock = std::chrono::steady_clock;
using shoal::net::TlsCredentials;

double CpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p * static_cast<double>(values.size() - 1))];
}

struct Arm {
  std::string name;
  std::string target;
  std::shared_ptr<const TlsCredentials> credentials;
  std::vector<double> micros;
  double cpu_seconds = 0;
  int resumed = 0;
  int failed = 0;
};

// One reconnection: a new channel (a subchannel pool of its own), one Resolve.
void Reconnect(Arm& arm) {
  const std::string& target = arm.target;
  const double cpu_before = CpuSeconds();
  const auto start = Clock::now();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  arm.credentials->ConfigureChannel(target, args);
  auto stub = shoal::wire::Shoal::NewStub(
      grpc::CreateCustomChannel(target, arm.credentials->Channel(), args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  shoal::wire::ResolveRequest request;
  shoal::wire::ResolveResponse response;
  const grpc::Status status = stub->Resolve(&context, request, &response);
  const auto end = Clock::now();
  arm.cpu_seconds += CpuSeconds() - cpu_before;
  if (!status.ok()) {
    ++arm.failed;
    return;
  }
  arm.micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  const auto reused = context.auth_context()->FindPropertyValues(GRPC_SSL_SESSION_REUSED_PROPERTY);
  if (!reused.empty() && reused.front() == "true") ++arm.resumed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A reconnection over mutual TLS: session resumption against a full handshake"};
  int reconnections = 200;
  app.add_option("--reconnections", reconnections, "reconnections per arm")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  char pattern[] = "/tmp/shoal-tls-resume-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const std::string certs = std::string(pattern) + "/certs";
  namespace security = shoal::security;
  if (!security::CreateCa({.certs_dir = certs}).ok() ||
      !security::CreateNodeCert({.certs_dir = certs, .hosts = {}}).ok()) {
    std::fprintf(stderr, "cannot create certificates in %s\n", certs.c_str());
    return 1;
  }
  const std::string load_before = LoadAverage();
  int status = 0;
  {
    auto server = shoal::net::GrpcRuntime::Start(
        {.listen = "127.0.0.1:0", .security = {.tls = security::NodeTlsFiles(certs)}});
    auto plain_server = shoal::net::GrpcRuntime::Start({.listen = "127.0.0.1:0"});
    if (!server.ok() || !plain_server.ok()) {
      std::fprintf(stderr, "%s %s\n", server.status().ToString().c_str(),
                   plain_server.status().ToString().c_str());
      return 1;
    }
    std::vector<Arm> arms(3);
    for (int i = 0; i < 2; ++i) {
      const bool resume = i == 0;
      arms[i].name = resume ? "resumed" : "full";
      arms[i].target = (*server)->advertised_address();
      arms[i].credentials =
          TlsCredentials::Create({.tls = security::NodeTlsFiles(certs), .resume_sessions = resume})
              .value();
    }
    arms[2].name = "plaintext";
    arms[2].target = (*plain_server)->advertised_address();
    arms[2].credentials = TlsCredentials::Create({}).value();
    for (Arm& arm : arms) {
      Arm warm_up = arm;  // fills the cache, warms gRPC
      for (int i = 0; i < 5; ++i) Reconnect(warm_up);
    }
    for (int i = 0; i < reconnections; ++i) {
      for (size_t k = 0; k < arms.size(); ++k) Reconnect(arms[(i + k) % arms.size()]);
    }
    std::printf("%d reconnections per arm to %s, load average before %s, after %s\n\n",
                reconnections, arms[0].target.c_str(), load_before.c_str(), LoadAverage().c_str());
    std::printf(
        "| arm | resumed | failed | median µs | p90 µs | CPU µs per reconnection (both sides) "
        "|\n|---|---|---|---|---|---|\n");
    for (const Arm& arm : arms) {
      if (arm.micros.empty()) {
        status = 1;
        continue;
      }
      std::printf("| %s | %d | %d | %.0f | %.0f | %.0f |\n", arm.name.c_str(), arm.resumed,
                  arm.failed, Percentile(arm.micros, 0.5), Percentile(arm.micros, 0.9),
                  arm.cpu_seconds * 1e6 / static_cast<double>(reconnections));
    }
    if (status == 0) {
      std::printf("\nresumed / full: median wall time %.2fx, CPU %.2fx\n",
                  Percentile(arms[0].micros, 0.5) / Percentile(arms[1].micros, 0.5),
                  arms[0].cpu_seconds / arms[1].cpu_seconds);
      std::printf("plaintext / full: median wall time %.2fx, CPU %.2fx\n",
                  Percentile(arms[2].micros, 0.5) / Percentile(arms[1].micros, 0.5),
                  arms[2].cpu_seconds / arms[1].cpu_seconds);
    }
  }
  std::filesystem::remove_all(pattern);
  return status;
}
