// query_stream: the time to read every document of a collection over gRPC with paged Query
// (one round trip per page) and with QueryStream (one server stream per bucket), on a cluster of
// a coordinator and N storage nodes started in this process on loopback ports (each process on
// its own GrpcRuntime and port, as separate processes would be). Prints one JSON object with
// the median of R runs of each (docs/results/network.md, "Streamed Query").
//
//   query_stream --documents 100000 --nodes 3 --page 1000 --runs 3

#include <fmt/format.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/process/processes.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  int documents = 100000;
  uint32_t nodes = 3;
  uint32_t page = 1000;
  int runs = 3;
  int loaders = 8;
};

int Fail(const shoal::Status& status) {
  std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
  return 1;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int Run(const Flags& flags) {
  std::string dir = (std::filesystem::temp_directory_path() / "shoal-query-stream-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return Fail(shoal::InternalError("mkdtemp"));
  shoal::process::CoordinatorProcessOptions coordinator_options;
  coordinator_options.data_dir = dir + "/coordinator";
  coordinator_options.listen = "127.0.0.1:0";
  coordinator_options.initial_nodes = flags.nodes;
  coordinator_options.buckets = 32;
  coordinator_options.sync = false;
  coordinator_options.coordinator.auto_balance = false;
  auto coordinator = shoal::process::CoordinatorProcess::Start(coordinator_options);
  if (!coordinator.ok()) return Fail(coordinator.status());
  std::vector<std::unique_ptr<shoal::process::NodeProcess>> nodes;
  for (uint32_t id = 1; id <= flags.nodes; ++id) {
    shoal::process::NodeProcessOptions options;
    options.id = id;
    options.data_dir = fmt::format("{}/node-{}", dir, id);
    options.listen = "127.0.0.1:0";
    options.coordinator = (*coordinator)->address();
    auto node = shoal::process::NodeProcess::Start(options);
    if (!node.ok()) return Fail(node.status());
    nodes.push_back(std::move(*node));
  }
  auto db = shoal::Database::Connect("shoal://" + (*coordinator)->address(), {.insecure = true});
  if (!db.ok()) return Fail(db.status());
  auto docs = (*db)->GetCollection("docs");
  if (!docs.ok()) return Fail(docs.status());

  // Small documents (about 30 bytes), loaded by parallel clients; not timed.
  std::atomic<int> failed{0};
  std::vector<std::thread> loaders;
  for (int t = 0; t < flags.loaders; ++t) {
    loaders.emplace_back([&, t] {
      for (int i = t; i < flags.documents; i += flags.loaders) {
        if (!docs->Upsert(fmt::format("d{:07}", i), fmt::format(R"({{"i":{}}})", i)).ok()) {
          ++failed;
        }
      }
    });
  }
  for (auto& loader : loaders) loader.join();
  if (failed > 0)
    return Fail(shoal::UnavailableError(fmt::format("{} loads failed", failed.load())));

  std::vector<double> paged_seconds;
  std::vector<double> streamed_seconds;
  for (int run = 0; run < flags.runs; ++run) {
    size_t count = 0;
    auto start = Clock::now();
    shoal::QueryOptions query{.filter = {}, .limit = flags.page, .cursor = ""};
    do {
      auto page = docs->Query(query);
      if (!page.ok()) return Fail(page.status());
      count += page->documents.size();
      query.cursor = page->next_cursor;
    } while (!query.cursor.empty());
    paged_seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (count != static_cast<size_t>(flags.documents)) {
      return Fail(shoal::InternalError(fmt::format("paged query read {} documents", count)));
    }

    count = 0;
    start = Clock::now();
    query.cursor.clear();
    shoal::Status status = docs->QueryStream(query, [&](const shoal::Document&) {
      ++count;
      return shoal::OkStatus();
    });
    if (!status.ok()) return Fail(status);
    streamed_seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (count != static_cast<size_t>(flags.documents)) {
      return Fail(shoal::InternalError(fmt::format("streamed query read {} documents", count)));
    }
  }
  const nlohmann::json out{{"documents", flags.documents},
                           {"nodes", flags.nodes},
                           {"page", flags.page},
                           {"runs", flags.runs},
                           {"paged_seconds", paged_seconds},
                           {"streamed_seconds", streamed_seconds},
                           {"paged_median_seconds", Median(paged_seconds)},
                           {"streamed_median_seconds", Median(streamed_seconds)}};
  std::printf("%s\n", out.dump().c_str());
  (void)(*db)->Close();
  for (auto& node : nodes) (void)node->Stop();
  coordinator->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Paged Query against QueryStream over gRPC on loopback"};
  Flags flags;
  app.add_option("--documents", flags.documents, "Documents loaded")->check(CLI::PositiveNumber);
  app.add_option("--nodes", flags.nodes, "Storage nodes")->check(CLI::Range(1u, 16u));
  app.add_option("--page", flags.page, "Documents per page / per streamed message")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--runs", flags.runs, "Runs of each (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--loaders", flags.loaders, "Parallel clients loading the documents")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return Run(flags);
}
