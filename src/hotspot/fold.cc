#include "src/hotspot/fold.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace shoal::hotspot {
namespace {

[[nodiscard]] Status TypeError(std::string_view fold, std::string_view expected, const Value& v) {
  return InvalidArgumentError(fmt::format("fold {} takes {}, not {}", fold, expected, v.dump()));
}

[[nodiscard]] bool IsInteger(const Value& v) {
  return v.is_number_integer() || v.is_number_unsigned();
}

// An int64 view of an integer JSON number, if it fits.
[[nodiscard]] std::optional<int64_t> AsInt64(const Value& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

StatusOr<Value> Sum(const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) {
    return TypeError("sum", "numbers", a.is_number() ? b : a);
  }
  if (IsInteger(a) && IsInteger(b)) {
    const auto x = AsInt64(a);
    const auto y = AsInt64(b);
    int64_t out = 0;
    if (!x || !y || __builtin_add_overflow(*x, *y, &out)) {
      return OutOfRangeError(fmt::format("sum of {} and {} overflows int64", a.dump(), b.dump()));
    }
    return Value(out);
  }
  return Value(a.get<double>() + b.get<double>());
}

// min and max: null is "no value yet", the neutral element.
template <bool kMin>
StatusOr<Value> Extreme(const Value& a, const Value& b) {
  if (a.is_null()) {
    if (!b.is_null() && !b.is_number()) return TypeError(kMin ? "min" : "max", "numbers", b);
    return b;
  }
  if (b.is_null()) {
    if (!a.is_number()) return TypeError(kMin ? "min" : "max", "numbers", a);
    return a;
  }
  if (!a.is_number() || !b.is_number()) {
    return TypeError(kMin ? "min" : "max", "numbers", a.is_number() ? b : a);
  }
  if (IsInteger(a) && IsInteger(b) && AsInt64(a) && AsInt64(b)) {
    const int64_t x = *AsInt64(a);
    const int64_t y = *AsInt64(b);
    return Value(kMin ? std::min(x, y) : std::max(x, y));
  }
  const double x = a.get<double>();
  const double y = b.get<double>();
  return Value(kMin ? std::min(x, y) : std::max(x, y));
}

StatusOr<Value> BitOr(const Value& a, const Value& b) {
  const bool a_ok = a.is_number_unsigned() || (a.is_number_integer() && a.get<int64_t>() >= 0);
  const bool b_ok = b.is_number_unsigned() || (b.is_number_integer() && b.get<int64_t>() >= 0);
  if (!a_ok || !b_ok) return TypeError("bit_or", "unsigned integers", a_ok ? b : a);
  return Value(a.get<uint64_t>() | b.get<uint64_t>());
}

// Sets are JSON arrays kept sorted (by JSON order) and without duplicates.
[[nodiscard]] Value Normalized(const Value& array) {
  std::vector<Value> items(array.begin(), array.end());
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return Value(std::move(items));
}

StatusOr<Value> SetUnion(const Value& a, const Value& b) {
  if (!a.is_array() || !b.is_array()) return TypeError("set_union", "arrays", a.is_array() ? b : a);
  Value all = a;
  for (const auto& item : b) all.push_back(item);
  return Normalized(all);
}

StatusOr<Value> LiftSet(const Value& operand) {
  if (operand.is_array()) return Normalized(operand);
  return Value(Value::array({operand}));
}

StatusOr<Value> LiftCount(const Value& /*operand*/) { return Value(1); }

}  // namespace

Fold::Fold(std::string name, Value neutral, CombineFn combine, LiftFn lift)
    : name_(std::move(name)),
      neutral_(std::move(neutral)),
      combine_(std::move(combine)),
      lift_(std::move(lift)) {}

StatusOr<Value> Fold::Combine(const Value& a, const Value& b) const {
  // A custom fold is user code: it may throw (nlohmann conversions do); no exception leaves.
  try {
    return combine_(a, b);
  } catch (const std::exception& e) {
    return InvalidArgumentError(
        fmt::format("fold {} failed on {} and {}: {}", name_, a.dump(), b.dump(), e.what()));
  }
}

StatusOr<Value> Fold::Lift(const Value& operand) const {
  if (lift_) {
    try {
      return lift_(operand);
    } catch (const std::exception& e) {
      return InvalidArgumentError(
          fmt::format("fold {} cannot take {}: {}", name_, operand.dump(), e.what()));
    }
  }
  // The operand is a value: check it by folding it with the neutral element.
  SHOAL_ASSIGN_OR_RETURN(Value checked, Combine(neutral_, operand));
  (void)checked;
  return operand;
}

Status CheckFoldLaws(const Fold& fold, const Value& neutral, const std::vector<Value>& samples) {
  if (samples.size() < 2 || samples.size() > kMaxFoldSamples) {
    return InvalidArgumentError(
        fmt::format("fold {}: give 2 to {} sample values", fold.name(), kMaxFoldSamples));
  }
  std::vector<Value> values;
  for (const auto& sample : samples) {
    SHOAL_ASSIGN_OR_RETURN(Value v, fold.Lift(sample));
    values.push_back(std::move(v));
  }
  for (const auto& a : values) {
    SHOAL_ASSIGN_OR_RETURN(Value left, fold.Combine(neutral, a));
    SHOAL_ASSIGN_OR_RETURN(Value right, fold.Combine(a, neutral));
    if (left != a || right != a) {
      return InvalidArgumentError(
          fmt::format("fold {}: {} is not neutral for {}", fold.name(), neutral.dump(), a.dump()));
    }
    for (const auto& b : values) {
      SHOAL_ASSIGN_OR_RETURN(Value ab, fold.Combine(a, b));
      SHOAL_ASSIGN_OR_RETURN(Value ba, fold.Combine(b, a));
      if (ab != ba) {
        return InvalidArgumentError(
            fmt::format("fold {} is not commutative: f({}, {}) = {} but "
                        "f({}, {}) = {}",
                        fold.name(), a.dump(), b.dump(), ab.dump(), b.dump(), a.dump(), ba.dump()));
      }
      for (const auto& c : values) {
        SHOAL_ASSIGN_OR_RETURN(Value bc, fold.Combine(b, c));
        SHOAL_ASSIGN_OR_RETURN(Value ab_c, fold.Combine(ab, c));
        SHOAL_ASSIGN_OR_RETURN(Value a_bc, fold.Combine(a, bc));
        if (ab_c != a_bc) {
          return InvalidArgumentError(
              fmt::format("fold {} is not associative on {}, {}, {}: {} vs {}", fold.name(),
                          a.dump(), b.dump(), c.dump(), ab_c.dump(), a_bc.dump()));
        }
      }
    }
  }
  return OkStatus();
}

FoldRegistry::FoldRegistry() {
  auto add = [this](std::string name, Value neutral, Fold::CombineFn combine,
                    Fold::LiftFn lift = {}) {
    auto fold =
        std::make_shared<Fold>(name, std::move(neutral), std::move(combine), std::move(lift));
    folds_.emplace(std::move(name), std::move(fold));
  };
  add("sum", Value(0), Sum);
  add("min", Value(nullptr), Extreme<true>);
  add("max", Value(nullptr), Extreme<false>);
  add("count", Value(0), Sum, LiftCount);
  add("bit_or", Value(0), BitOr);
  add("set_union", Value(Value::array()), SetUnion, LiftSet);
}

FoldRegistry& FoldRegistry::Global() {
  static FoldRegistry* const registry = new FoldRegistry();
  return *registry;
}

Status FoldRegistry::Register(FoldPtr fold, const std::vector<Value>& samples) {
  if (fold == nullptr || fold->name().empty() || fold->name().size() > 64) {
    return InvalidArgumentError("a fold needs a name of 1 to 64 bytes");
  }
  SHOAL_RETURN_IF_ERROR(CheckFoldLaws(*fold, fold->neutral(), samples));
  std::lock_guard lock(mu_);
  if (folds_.contains(fold->name())) {
    return AlreadyExistsError(fmt::format("fold {} is already registered", fold->name()));
  }
  folds_.emplace(fold->name(), std::move(fold));
  return OkStatus();
}

StatusOr<FoldPtr> FoldRegistry::Find(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = folds_.find(name);
  if (it == folds_.end()) {
    return InvalidArgumentError(fmt::format("unknown fold \"{}\"", name));
  }
  return it->second;
}

}  // namespace shoal::hotspot
