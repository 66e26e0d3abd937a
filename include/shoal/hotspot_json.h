#pragma once

// include/shoal/hotspot.h's fold functions on nlohmann::json values, for programs that use that
// library (include/shoal/mapper.h does); the same folds and registry, without the text round trip.
//
//   shoal::RegisterFold("gcd", 0, [](const shoal::Json& a, const shoal::Json& b)
//                           -> shoal::StatusOr<shoal::Json> { return std::gcd(...); },
//                       {12, 18, 7, 0});
//
// Thread-safety: every function is thread-safe.

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "include/shoal/hotspot.h"
#include "include/shoal/status.h"

namespace shoal {

using Json = nlohmann::json;
using FoldFunction = std::function<StatusOr<Json>(const Json&, const Json&)>;

// As RegisterFoldText.
[[nodiscard]] Status RegisterFold(std::string_view name, const Json& neutral, FoldFunction combine,
                                  const std::vector<Json>& samples);
// As FoldValuesText, LiftOperandText and NeutralOfText.
[[nodiscard]] StatusOr<Json> FoldValues(std::string_view fold, const Json& a, const Json& b);
[[nodiscard]] StatusOr<Json> LiftOperand(std::string_view fold, const Json& operand);
[[nodiscard]] StatusOr<Json> NeutralOf(std::string_view fold);

}  // namespace shoal
