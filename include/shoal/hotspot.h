#pragma once

// Custom fold functions for sharded fields (paper 003 §3 @ShardFold; docs/design/hotspot.md).
//
//   shoal::RegisterFold("gcd", 0, [](const shoal::Json& a, const shoal::Json& b)
//                           -> shoal::StatusOr<shoal::Json> { return std::gcd(...); },
//                       {12, 18, 7, 0});
//   collection.Declare(R"({"g": {"fold": "gcd", "shards": 4}})");
//
// A fold must be commutative and associative with `neutral` as its identity: shards are folded
// in any order, and a shard's value may be folded into the base long after it was written.
// RegisterFold checks the laws on every pair and triple of `samples` (2 to 16 JSON values) and
// refuses a fold that breaks one (kInvalidArgument). Names are process-wide; built-ins: sum,
// min, max, count, bit_or, set_union. Register before opening collections that use the fold.
//
// Thread-safety: RegisterFold is thread-safe.

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal {

using Json = nlohmann::json;
using FoldFunction = std::function<StatusOr<Json>(const Json&, const Json&)>;

[[nodiscard]] Status RegisterFold(std::string_view name, const Json& neutral, FoldFunction combine,
                                  const std::vector<Json>& samples);

// Folds two values with the named fold (built-in or registered): what reads do across shards.
[[nodiscard]] StatusOr<Json> FoldValues(std::string_view fold, const Json& a, const Json& b);
// The value an update with `operand` contributes (count: 1; the others: the operand, checked).
[[nodiscard]] StatusOr<Json> LiftOperand(std::string_view fold, const Json& operand);
// The fold's own neutral element.
[[nodiscard]] StatusOr<Json> NeutralOf(std::string_view fold);

}  // namespace shoal
