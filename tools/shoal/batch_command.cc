// `shoal batch COLLECTION [--file F]`: JSON-lines writes (tools/shoal/batch_lines.h) sent in
// batches (Collection::Batch), one batch in memory at a time, each sent once full or once the
// input has nothing more ready; one result per input line, in order, printed batch by batch. A
// malformed line fails the command: before anything is sent when the input can be read twice (a
// file), else once the batches before its own are sent.

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <ext/stdio_filebuf.h>
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "include/shoal/shoal.h"
#include "tools/shoal/batch_lines.h"
#include "tools/shoal/net_commands.h"

namespace shoal::tools {
namespace {

struct BatchFlags {
  std::string cluster{kDefaultCluster};
  std::string collection;
  std::string file;  // "" or "-" = stdin
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

// Reads every line of `in` once, without sending anything; OK if all are well-formed and within
// the limits.
Status CheckAll(std::istream& in, size_t batch_size) {
  BatchReader reader(in, batch_size);
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(std::vector<BatchLine> batch, reader.Next());
    if (batch.empty()) return OkStatus();
  }
}

// `error`, of the batch after the first `written` lines' writes, saying that those were sent.
Status AfterWritten(const Status& error, size_t written) {
  if (written == 0) return error;
  return MakeStatus(error.code(),
                    fmt::format("{}; the {} writes before its batch were sent (their results are "
                                "above), none from it on",
                                MessageOf(error), written));
}

int RunBatch(const BatchFlags& flags) {
  std::ifstream file;
  // Standard input through a file buffer of its own, whose in_avail() sees what a pipe holds
  // (std::cin, synchronized with C's stdio, cannot tell).
  __gnu_cxx::stdio_filebuf<char> stdin_buffer(STDIN_FILENO, std::ios::in);
  std::istream standard_input(&stdin_buffer);
  std::istream* in = &standard_input;
  if (!flags.file.empty() && flags.file != "-") {
    if (std::error_code ec; std::filesystem::is_directory(flags.file, ec)) {
      return FailCommand(InvalidArgumentError(fmt::format("{} is a directory", flags.file)));
    }
    file.open(flags.file);
    if (!file) return FailCommand(NotFoundError(fmt::format("cannot open {}", flags.file)));
    in = &file;
  }
  // An input that can be read twice (a file, or stdin redirected from one) is checked whole
  // before anything is sent; a pipe is checked batch by batch as it streams.
  const std::streampos start = in->tellg();
  if (start != std::streampos(-1)) {
    if (Status checked = CheckAll(*in, flags.batch_size); !checked.ok()) {
      return FailCommand(checked);
    }
    in->clear();
    in->seekg(start);
  }
  BatchReader reader(*in, flags.batch_size);
  std::unique_ptr<Database> db;
  std::optional<Collection> collection;
  int exit_code = 0;
  size_t written = 0;  // lines whose write was sent, whatever its result
  while (true) {
    auto batch = reader.Next();
    if (!batch.ok()) return FailCommand(AfterWritten(batch.status(), written));
    if (batch->empty()) break;
    if (db == nullptr) {
      auto connected = Database::Connect(flags.cluster, ConnectOptionsOf(flags.security));
      if (!connected.ok()) return FailCommand(connected.status());
      db = *std::move(connected);
      auto got = db->GetCollection(flags.collection);
      if (!got.ok()) return FailCommand(got.status());
      collection.emplace(*std::move(got));
    }
    std::vector<BatchWrite> writes;
    writes.reserve(batch->size());
    for (const BatchLine& line : *batch) writes.push_back(line.write);
    auto results = collection->Batch(writes);
    if (!results.ok()) return FailCommand(AfterWritten(results.status(), written));
    for (size_t i = 0; i < batch->size(); ++i) {
      PrintResult((*batch)[i], (*results)[i], flags.json);
      if (!(*results)[i].ok()) exit_code = 1;
    }
    written += batch->size();
    std::fflush(stdout);  // a reader of the output sees each batch as it is written
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
  cmd->add_option("--file", flags->file, "Read this file instead of stdin ('-': stdin)");
  cmd->add_option("--batch-size", flags->batch_size, "Writes per batch")
      ->check(CLI::Range(size_t{1}, kMaxBatchWrites))
      ->capture_default_str();
  cmd->callback([flags] { std::exit(RunBatch(*flags)); });
}

}  // namespace shoal::tools
