#include "src/hotspot/cell_state.h"

#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <optional>
#include <system_error>

namespace shoal::hotspot {
namespace {

[[nodiscard]] Status Corrupt(std::string_view what) {
  return MakeStatus(StatusCode::kDataLoss, fmt::format("sharded field state: {}", what));
}

// Consumes `prefix` from the front of `in`.
[[nodiscard]] bool Eat(std::string_view& in, std::string_view prefix) {
  if (!in.starts_with(prefix)) return false;
  in.remove_prefix(prefix.size());
  return true;
}

// Consumes a JSON integer from the front of `in` as nlohmann would type it: number_unsigned
// when non-negative, number_integer when negative. nullopt (nothing consumed) for anything
// else: fractions, exponents, leading zeros, values beyond 64 bits; the general path decides.
[[nodiscard]] std::optional<Value> EatInteger(std::string_view& in) {
  const bool negative = in.starts_with('-');
  const size_t start = negative ? 1 : 0;
  size_t end = start;
  while (end < in.size() && in[end] >= '0' && in[end] <= '9') ++end;
  if (end == start || (in[start] == '0' && end - start > 1)) return std::nullopt;
  if (end < in.size() && (in[end] == '.' || in[end] == 'e' || in[end] == 'E')) return std::nullopt;
  Value out;
  if (negative) {
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(in.data(), in.data() + end, v);
    if (ec != std::errc() || ptr != in.data() + end) return std::nullopt;
    out = v;
  } else {
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(in.data(), in.data() + end, v);
    if (ec != std::errc() || ptr != in.data() + end) return std::nullopt;
    out = v;
  }
  in.remove_prefix(end);
  return out;
}

[[nodiscard]] std::optional<uint64_t> EatCount(std::string_view& in) {
  size_t end = 0;
  while (end < in.size() && in[end] >= '0' && in[end] <= '9') ++end;
  if (end == 0 || (in[0] == '0' && end > 1)) return std::nullopt;
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(in.data(), in.data() + end, v);
  if (ec != std::errc() || ptr != in.data() + end) return std::nullopt;
  in.remove_prefix(end);
  return v;
}

// The writer's own shape with an integer value and no owner; nullopt hands the body to the
// general path (it never rejects).
[[nodiscard]] std::optional<CellState> DecodeCompact(std::string_view in) {
  if (!Eat(in, R"({"v":)")) return std::nullopt;
  std::optional<Value> value = EatInteger(in);
  if (!value.has_value() || !Eat(in, R"(,"n":)")) return std::nullopt;
  const std::optional<uint64_t> updates = EatCount(in);
  if (!updates.has_value()) return std::nullopt;
  const bool sealed = Eat(in, R"(,"s":1)");
  if (in != "}") return std::nullopt;
  return CellState{.value = std::move(*value), .sealed = sealed, .updates = *updates, .owner = {}};
}

[[nodiscard]] bool IsCount(const Value& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

[[nodiscard]] bool IsSet(const Value& json, const char* member) {
  auto it = json.find(member);
  if (it == json.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  return it->is_number_integer() && it->get<int64_t>() == 1;
}

// Any JSON object with "v": this codec's shape with other values, and the previous format.
[[nodiscard]] StatusOr<CellState> DecodeGeneral(std::string_view body) {
  Value json = Value::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return Corrupt("a cell is not a JSON object");
  auto v = json.find("v");
  if (v == json.end()) return Corrupt("a cell lacks its value");
  CellState cell;
  cell.value = std::move(*v);
  cell.sealed = IsSet(json, "s") || IsSet(json, "sealed");
  if (auto n = json.find("n"); n != json.end() && IsCount(*n)) cell.updates = n->get<uint64_t>();
  if (auto owner = json.find("owner"); owner != json.end() && owner->is_string()) {
    cell.owner = owner->get<std::string>();
  }
  return cell;
}

}  // namespace

StatusOr<CellState> CellState::Decode(std::string_view body) {
  if (std::optional<CellState> cell = DecodeCompact(body)) return std::move(*cell);
  return DecodeGeneral(body);
}

std::string CellState::Encode() const {
  std::string out = R"({"v":)";
  if (value.is_number_unsigned()) {
    fmt::format_to(std::back_inserter(out), "{}", value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    fmt::format_to(std::back_inserter(out), "{}", value.get<int64_t>());
  } else {
    out += value.dump();
  }
  fmt::format_to(std::back_inserter(out), R"(,"n":{})", updates);
  if (sealed) out += R"(,"s":1)";
  if (!owner.empty()) {
    // The owner is hex (OwnerOf); dump() still escapes it, so any string stays valid JSON.
    out += R"(,"owner":)";
    out += Value(owner).dump();
  }
  out += '}';
  return out;
}

}  // namespace shoal::hotspot
