// `shoal batch COLLECTION [--file F]`: JSON-lines writes (tools/shoal/batch_lines.h) sent in
// batches (Collection::Batch); one result per input line, in order. A malformed line fails the
// command before anything is sent.

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "include/shoal/shoal.h"
#include "tools/shoal/batch_lines.h"
#include "tools/shoal/net_commands.h"

namespace shoal::tools {
namespace {

struct BatchFlags {
  std::string cluster{kDefaultCluster};
  std::string collection;
  std::string file;  // "" = stdin
  size_t batch_size = kMaxBatchWrites;
  bool json = false;
  ClientSecurityFlags security;
};

void PrintResult(const BatchLine& line, const StatusOr<uint64_t>& result, bool json) {
  if (json) {
    nlohmann::json out{{"line", line.line}, {"key", line.write.key}};
    if (result.ok()) {
      out["version"] = *result;
    } else {
      out["error"] = {{"code", std::string(StatusCodeToString(result.status().code()))},
                      {"message", std::string(MessageOf(result.status()))}};
    }
    std::printf("%s\n", out.dump().c_str());
  } else if (result.ok()) {
    std::printf("line %zu %s: version %llu\n", line.line, line.write.key.c_str(),
                static_cast<unsigned long long>(*result));
  } else {
    std::printf("line %zu %s: error %s: %s\n", line.line, line.write.key.c_str(),
                std::string(StatusCodeToString(result.status().code())).c_str(),
                std::string(MessageOf(result.status())).c_str());
  }
}

int RunBatch(const BatchFlags& flags) {
  StatusOr<std::vector<BatchLine>> lines = InvalidArgumentError("unread");
  if (flags.file.empty()) {
    lines = ParseBatchLines(std::cin);
  } else {
    std::ifstream in(flags.file);
    if (!in) return FailCommand(NotFoundError(fmt::format("cannot open {}", flags.file)));
    lines = ParseBatchLines(in);
  }
  if (!lines.ok()) return FailCommand(lines.status());
  auto batches = SplitBatches(*lines, flags.batch_size);
  if (!batches.ok()) return FailCommand(batches.status());
  if (batches->empty()) return 0;
  auto db = Database::Connect(flags.cluster, ConnectOptionsOf(flags.security));
  if (!db.ok()) return FailCommand(db.status());
  auto collection = (*db)->GetCollection(flags.collection);
  if (!collection.ok()) return FailCommand(collection.status());
  int exit_code = 0;
  for (std::span<const BatchLine> batch : *batches) {
    std::vector<BatchWrite> writes;
    writes.reserve(batch.size());
    for (const BatchLine& line : batch) writes.push_back(line.write);
    auto results = collection->Batch(writes);
    if (!results.ok()) return FailCommand(results.status());
    for (size_t i = 0; i < batch.size(); ++i) {
      PrintResult(batch[i], (*results)[i], flags.json);
      if (!(*results)[i].ok()) exit_code = 1;
    }
  }
  return exit_code;
}

}  // namespace

void AddBatchCommand(CLI::App& app) {
  auto flags = std::make_shared<BatchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "batch",
      "Write JSON lines {\"op\":\"put|insert|update|delete\",\"key\":..,\"value\":{..}} in "
      "batches; one result per line (exit code 1 if any write failed)");
  AddClusterOption(cmd, &flags->cluster);
  cmd->add_flag("--json", flags->json, "Print one JSON object per line");
  AddClientSecurityOptions(cmd, &flags->security);
  cmd->add_option("collection", flags->collection,
                  "Collection (created if missing when a line puts or inserts)")
      ->required();
  cmd->add_option("--file", flags->file, "Read this file instead of stdin");
  cmd->add_option("--batch-size", flags->batch_size, "Writes per batch")
      ->check(CLI::Range(size_t{1}, kMaxBatchWrites))
      ->capture_default_str();
  cmd->callback([flags] { std::exit(RunBatch(*flags)); });
}

}  // namespace shoal::tools
