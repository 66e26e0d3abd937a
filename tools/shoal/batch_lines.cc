#include "tools/shoal/batch_lines.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

namespace shoal::tools {
namespace {

StatusOr<BatchOp> OpOf(const nlohmann::json& op) {
  if (!op.is_string()) return InvalidArgumentError("\"op\" must be a string");
  const auto& name = op.get_ref<const std::string&>();
  if (name == "put") return BatchOp::kUpsert;
  if (name == "insert") return BatchOp::kInsert;
  if (name == "update") return BatchOp::kUpdate;
  if (name == "delete") return BatchOp::kDelete;
  return InvalidArgumentError(
      fmt::format("unknown op \"{}\" (put, insert, update or delete)", name));
}

StatusOr<BatchWrite> ParseLine(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return InvalidArgumentError("not JSON");
  if (!json.is_object()) return InvalidArgumentError("not a JSON object");
  for (const auto& [name, value] : json.items()) {
    if (name != "op" && name != "key" && name != "value") {
      return InvalidArgumentError(fmt::format("unknown member \"{}\"", name));
    }
  }
  if (!json.contains("op")) return InvalidArgumentError("missing \"op\"");
  SHOAL_ASSIGN_OR_RETURN(BatchOp op, OpOf(json["op"]));
  if (!json.contains("key") || !json["key"].is_string()) {
    return InvalidArgumentError("\"key\" must be a string");
  }
  BatchWrite write{
      .op = op, .key = json["key"].get<std::string>(), .json = {}, .expected_version = 0};
  if (write.key.empty()) return InvalidArgumentError("\"key\" is empty");
  if (op == BatchOp::kDelete) {
    if (json.contains("value")) return InvalidArgumentError("delete takes no \"value\"");
    return write;
  }
  if (!json.contains("value") || !json["value"].is_object()) {
    return InvalidArgumentError("\"value\" must be a JSON object");
  }
  write.json = json["value"].dump();
  return write;
}

}  // namespace

StatusOr<std::vector<BatchLine>> ParseBatchLines(std::istream& in) {
  std::vector<BatchLine> out;
  std::string text;
  for (size_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto write = ParseLine(text);
    if (!write.ok()) {
      return InvalidArgumentError(
          fmt::format("line {}: {}", line, std::string(write.status().message())));
    }
    out.push_back(BatchLine{.line = line, .write = std::move(*write)});
  }
  if (in.bad()) return InvalidArgumentError("could not read the input");
  return out;
}

StatusOr<std::vector<std::span<const BatchLine>>> SplitBatches(std::span<const BatchLine> lines,
                                                               size_t max_writes) {
  if (max_writes == 0 || max_writes > kMaxBatchWrites) {
    return InvalidArgumentError(
        fmt::format("a batch holds 1 to {} writes, not {}", kMaxBatchWrites, max_writes));
  }
  std::vector<std::span<const BatchLine>> out;
  size_t begin = 0;
  size_t bytes = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t size = lines[i].write.key.size() + lines[i].write.json.size();
    if (size > kMaxBatchBytes) {
      return ResourceExhaustedError(
          fmt::format("line {}: {} bytes of key and value; the batch limit is {} (docs/limits.md)",
                      lines[i].line, size, kMaxBatchBytes));
    }
    if (i - begin == max_writes || bytes + size > kMaxBatchBytes) {
      out.push_back(lines.subspan(begin, i - begin));
      begin = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (begin < lines.size()) out.push_back(lines.subspan(begin));
  return out;
}

}  // namespace shoal::tools
