#include "src/storage/predicate.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <optional>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

namespace od = simdjson::ondemand;

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Compares the stored value `v` with `operand`; nullopt when the types are incomparable.
// Errors inside the value (impossible for validated bodies) are reported as incomparable.
std::optional<int> CompareValue(od::value& v, const FieldValue& operand) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return std::nullopt;
  switch (type) {
    case od::json_type::null:
      if (std::holds_alternative<std::nullptr_t>(operand)) return 0;
      return std::nullopt;
    case od::json_type::boolean: {
      bool b = false;
      if (!std::holds_alternative<bool>(operand) || v.get_bool().get(b) != simdjson::SUCCESS) {
        return std::nullopt;
      }
      return Cmp(b, std::get<bool>(operand));
    }
    case od::json_type::string: {
      std::string_view s;
      if (!std::holds_alternative<std::string>(operand) ||
          v.get_string().get(s) != simdjson::SUCCESS) {
        return std::nullopt;
      }
      const std::string_view want = std::get<std::string>(operand);
      return Cmp(s, want);
    }
    case od::json_type::number: {
      const bool operand_int = std::holds_alternative<int64_t>(operand);
      if (!operand_int && !std::holds_alternative<double>(operand)) return std::nullopt;
      od::number_type ntype;
      if (v.get_number_type().get(ntype) != simdjson::SUCCESS) return std::nullopt;
      if (ntype == od::number_type::signed_integer && operand_int) {
        int64_t i = 0;
        if (v.get_int64().get(i) != simdjson::SUCCESS) return std::nullopt;
        return Cmp(i, std::get<int64_t>(operand));
      }
      if (ntype == od::number_type::unsigned_integer && operand_int) {
        return 1;  // above INT64_MAX, so above every int64 operand
      }
      double d = 0;
      if (v.get_double().get(d) != simdjson::SUCCESS) return std::nullopt;
      const double o =
          operand_int ? static_cast<double>(std::get<int64_t>(operand)) : std::get<double>(operand);
      return Cmp(d, o);
    }
    case od::json_type::array:
    case od::json_type::object:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::string_view CompareOpName(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "==";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "?";
}

bool Satisfies(CompareOp op, int cmp) {
  switch (op) {
    case CompareOp::kEq:
      return cmp == 0;
    case CompareOp::kNe:
      return cmp != 0;
    case CompareOp::kLt:
      return cmp < 0;
    case CompareOp::kLe:
      return cmp <= 0;
    case CompareOp::kGt:
      return cmp > 0;
    case CompareOp::kGe:
      return cmp >= 0;
  }
  return false;
}

Status ValidateFilter(const DocumentFilter& filter) {
  for (const FieldPredicate& p : filter.all_of) {
    for (const std::string& part : SplitPath(p.path)) {
      if (part.empty()) {
        return StorageError(ErrorReason::kInvalidArgument,
                            fmt::format("bad field path {:?}", p.path));
      }
    }
    if (std::holds_alternative<double>(p.value) &&
        std::get<double>(p.value) != std::get<double>(p.value)) {
      return StorageError(ErrorReason::kInvalidArgument, fmt::format("NaN operand ({})", p.path));
    }
    const bool ordered = p.op != CompareOp::kEq && p.op != CompareOp::kNe;
    if (ordered && (std::holds_alternative<std::nullptr_t>(p.value) ||
                    std::holds_alternative<bool>(p.value))) {
      return StorageError(
          ErrorReason::kInvalidArgument,
          fmt::format("operator {} needs a number or a string ({})", CompareOpName(p.op), p.path));
    }
  }
  return OkStatus();
}

struct FilterEvaluator::State {
  od::parser parser;
  std::string buffer;  // the body plus simdjson's padding
};

FilterEvaluator::FilterEvaluator(const DocumentFilter& filter)
    : filter_(filter), state_(std::make_unique<State>()) {
  paths_.reserve(filter.all_of.size());
  for (const FieldPredicate& p : filter.all_of) paths_.push_back(SplitPath(p.path));
}

FilterEvaluator::~FilterEvaluator() = default;

StatusOr<bool> FilterEvaluator::Matches(std::string_view body) {
  if (filter_.empty()) return true;
  state_->buffer.assign(body);
  state_->buffer.resize(body.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (state_->parser.iterate(state_->buffer.data(), body.size(), state_->buffer.size()).get(doc) !=
      simdjson::SUCCESS) {
    return StorageError(ErrorReason::kCorruption, "stored body does not parse");
  }
  for (size_t i = 0; i < filter_.all_of.size(); ++i) {
    const FieldPredicate& predicate = filter_.all_of[i];
    doc.rewind();
    od::value v;
    auto error = doc.find_field_unordered(paths_[i][0]).get(v);
    for (size_t j = 1; j < paths_[i].size() && error == simdjson::SUCCESS; ++j) {
      od::value inner;
      error = v.find_field_unordered(paths_[i][j]).get(inner);
      if (error == simdjson::SUCCESS) v = inner;
    }
    if (error == simdjson::NO_SUCH_FIELD || error == simdjson::INCORRECT_TYPE) return false;
    if (error != simdjson::SUCCESS) {
      return StorageError(ErrorReason::kCorruption,
                          fmt::format("stored body: {}", simdjson::error_message(error)));
    }
    const std::optional<int> cmp = CompareValue(v, predicate.value);
    if (!cmp.has_value()) {
      if (predicate.op != CompareOp::kNe) return false;
      continue;  // present with another type: not equal
    }
    if (!Satisfies(predicate.op, *cmp)) return false;
  }
  return true;
}

}  // namespace shoal::storage
