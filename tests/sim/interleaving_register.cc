#include "tests/sim/interleaving_register.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "src/storage/errors.h"

namespace shoal::sim {

std::string OpResult::DebugString() const {
  static constexpr std::string_view kNames[] = {"ok", "duplicate", "not-found", "not-applied",
                                                "unknown"};
  std::string out(kNames[static_cast<int>(kind)]);
  if (!value.empty()) out += fmt::format(" '{}'", value);
  if (!detail.empty()) out += fmt::format(" ({})", detail);
  return out;
}

OpResult ResultOf(const Status& status) {
  using Kind = OpResult::Kind;
  if (status.ok()) return {.kind = Kind::kOk, .value = "", .detail = ""};
  if (storage::Is(status, storage::ErrorReason::kDuplicate)) {
    return {.kind = Kind::kDuplicate, .value = "", .detail = ""};
  }
  if (storage::Is(status, storage::ErrorReason::kNotFound)) {
    return {.kind = Kind::kNotFound, .value = "", .detail = ""};
  }
  if (status.code() == StatusCode::kUnknown || status.code() == StatusCode::kDeadlineExceeded) {
    return {.kind = Kind::kUnknown, .value = "", .detail = status.ToString()};
  }
  return {.kind = Kind::kNotApplied, .value = "", .detail = status.ToString()};
}

OpResult Expect(OpType op, const std::string& value, Register& r) {
  using Kind = OpResult::Kind;
  auto result = [](Kind kind, std::string v = "") {
    return OpResult{.kind = kind, .value = std::move(v), .detail = ""};
  };
  switch (op) {
    case OpType::kInsert:
      if (r.live) return result(Kind::kDuplicate);
      r = {.live = true, .value = value};
      return result(Kind::kOk);
    case OpType::kUpdate:
      if (!r.live) return result(Kind::kNotFound);
      r.value = value;
      return result(Kind::kOk);
    case OpType::kDelete:
      if (!r.live) return result(Kind::kNotFound);
      r = {};
      return result(Kind::kOk);
    case OpType::kGet:
      return r.live ? result(Kind::kOk, r.value) : result(Kind::kNotFound);
    case OpType::kQuery:
      return result(Kind::kOk, r.live ? r.value : "");
  }
  return result(Kind::kNotApplied);
}

OpResult QueryAll(client::Client& client, CollectionId collection) {
  client::QueryOptions query{.collection = collection, .filter = {}, .limit = 10, .cursor = ""};
  OpResult out{.kind = OpResult::Kind::kOk, .value = "", .detail = ""};
  for (int page = 0; page < 100; ++page) {
    auto result = client.Query(query);
    if (!result.ok()) return ResultOf(result.status());
    for (const auto& document : result->documents) {
      if (!out.value.empty()) out.value.push_back('|');
      out.value += document.body;
    }
    if (result->next_cursor.empty()) return out;
    query.cursor = result->next_cursor;
  }
  return {.kind = OpResult::Kind::kNotApplied, .value = "", .detail = "query did not end"};
}

OpResult GetOne(client::Client& client, CollectionId collection) {
  auto got = client.Get(collection, kInterleaveKey);
  OpResult out = ResultOf(got.status());
  if (got.ok()) out.value = got->body;
  return out;
}

bool MatchesSerialOrder(std::span<const ObservedOp> ops, const Register& initial,
                        const OpResult& final_get, const OpResult& final_query) {
  using Kind = OpResult::Kind;
  const size_t n = ops.size();
  if (n > 3) return false;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  do {
    for (uint32_t executed = 0; executed < (1u << n); ++executed) {
      bool possible = true;
      for (size_t i = 0; i < n; ++i) {
        const bool runs = (executed >> i) & 1;
        const Kind kind = ops[i].result.kind;
        if (runs && kind == Kind::kNotApplied) possible = false;
        if (!runs && kind != Kind::kNotApplied && kind != Kind::kUnknown) possible = false;
      }
      if (!possible) continue;
      Register r = initial;
      bool matches = true;
      for (size_t i : order) {
        if (((executed >> i) & 1) == 0) continue;
        const OpResult expected = Expect(ops[i].op, ops[i].value, r);
        const OpResult& got = ops[i].result;
        if (got.kind == Kind::kUnknown) continue;
        if (expected.kind != got.kind || expected.value != got.value) matches = false;
      }
      Register copy = r;
      const OpResult expected_get = Expect(OpType::kGet, "", copy);
      const OpResult expected_query = Expect(OpType::kQuery, "", copy);
      if (expected_get.kind != final_get.kind || expected_get.value != final_get.value ||
          expected_query.value != final_query.value) {
        matches = false;
      }
      if (matches) return true;
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return false;
}

namespace {
constexpr char kInitialValue[] = R"({"v":"init"})";
}  // namespace

Register InitialRegister(Scenario scenario) {
  return scenario == Scenario::kLive ? Register{.live = true, .value = kInitialValue} : Register{};
}

Status WriteInitialState(client::Client& admin, CollectionId collection, Scenario scenario) {
  if (scenario == Scenario::kAbsent) return OkStatus();
  SHOAL_RETURN_IF_ERROR(admin.Insert(collection, kInterleaveKey, kInitialValue).status());
  if (scenario == Scenario::kDeleted) {
    SHOAL_RETURN_IF_ERROR(admin.Delete(collection, kInterleaveKey).status());
  }
  return OkStatus();
}

}  // namespace shoal::sim
