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

StatusOr<std::vector<BatchLine>> BatchReader::Next() {
  if (!failed_.ok()) return failed_;
  if (max_writes_ == 0 || max_writes_ > kMaxBatchWrites) {
    failed_ = InvalidArgumentError(
        fmt::format("a batch holds 1 to {} writes, not {}", kMaxBatchWrites, max_writes_));
    return failed_;
  }
  std::vector<BatchLine> out;
  size_t bytes = 0;
  // Adds `line` to `out` if it fits; false if it starts the next batch instead.
  auto add = [&](BatchLine& line) -> bool {
    const size_t size = line.write.key.size() + line.write.json.size();
    if (size > kMaxBatchBytes) {
      failed_ = ResourceExhaustedError(
          fmt::format("line {}: {} bytes of key and value; the batch limit is {} (docs/limits.md)",
                      line.line, size, kMaxBatchBytes));
      return false;
    }
    if (!out.empty() && bytes + size > kMaxBatchBytes) return false;
    bytes += size;
    out.push_back(std::move(line));
    return true;
  };
  if (carried_.has_value()) {
    BatchLine line = *std::move(carried_);
    carried_.reset();
    if (!add(line)) return failed_;
  }
  std::string text;
  while (out.size() < max_writes_ && std::getline(in_, text)) {
    ++line_;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto write = ParseLine(text);
    if (!write.ok()) {
      failed_ = InvalidArgumentError(
          fmt::format("line {}: {}", line_, std::string(write.status().message())));
      return failed_;
    }
    BatchLine line{.line = line_, .write = *std::move(write)};
    if (!add(line)) {
      if (!failed_.ok()) return failed_;
      carried_ = std::move(line);
      break;
    }
    // Nothing more to read now (a pipe whose writer is slower than the cluster): the batch goes
    // rather than waiting for lines that may come much later.
    if (in_.rdbuf()->in_avail() <= 0) break;
  }
  if (in_.bad()) {
    failed_ = InvalidArgumentError("could not read the input");
    return failed_;
  }
  return out;
}

}  // namespace shoal::tools
