#include "src/hotspot/field_root.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace shoal::hotspot {
namespace {

[[nodiscard]] Status Corrupt(std::string_view what) {
  return MakeStatus(StatusCode::kDataLoss, fmt::format("sharded field state: {}", what));
}

[[nodiscard]] bool IsCount(const Value& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

}  // namespace

FieldRoot FieldRoot::Empty(Value base) {
  FieldRoot root;
  root.base_ = std::move(base);
  return root;
}

StatusOr<FieldRoot> FieldRoot::Decode(std::string_view body) {
  const Value json = Value::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return Corrupt("root is not a JSON object");
  if (!json.contains("base") || !json.contains("seq") || !IsCount(json["seq"])) {
    return Corrupt("root lacks base or seq");
  }
  FieldRoot root;
  root.base_ = json["base"];
  root.seq_ = json["seq"].get<uint64_t>();
  if (json.contains("cells")) {
    if (!json["cells"].is_array()) return Corrupt("root cells is not an array");
    for (const auto& cell : json["cells"]) {
      if (!cell.is_object() || !cell.contains("t") || !cell["t"].is_string()) {
        return Corrupt("a root cell lacks its token");
      }
      root.cells_.push_back(
          CellRef{.token = cell["t"].get<std::string>(), .active = !cell.contains("r")});
    }
  }
  if (json.contains("absorbed")) {
    if (!json["absorbed"].is_array()) return Corrupt("root absorbed is not an array");
    for (const auto& a : json["absorbed"]) {
      if (!a.is_object() || !a.contains("t") || !a["t"].is_string() || !a.contains("at") ||
          !IsCount(a["at"])) {
        return Corrupt("an absorbed entry lacks its token or seq");
      }
      AbsorbedCell entry{.token = a["t"].get<std::string>(),
                         .absorbed_at = a["at"].get<uint64_t>(),
                         .deleted_at = std::nullopt};
      if (a.contains("del")) {
        if (!IsCount(a["del"])) return Corrupt("an absorbed entry has a bad deletion seq");
        entry.deleted_at = a["del"].get<uint64_t>();
      }
      root.absorbed_.push_back(std::move(entry));
    }
  }
  return root;
}

std::string FieldRoot::Encode() const {
  Value json = Value::object();
  json["base"] = base_;
  json["seq"] = seq_;
  Value cells = Value::array();
  for (const auto& cell : cells_) {
    Value c = {{"t", cell.token}};
    if (!cell.active) c["r"] = 1;
    cells.push_back(std::move(c));
  }
  json["cells"] = std::move(cells);
  Value absorbed = Value::array();
  for (const auto& a : absorbed_) {
    Value e = {{"t", a.token}, {"at", a.absorbed_at}};
    if (a.deleted_at.has_value()) e["del"] = *a.deleted_at;
    absorbed.push_back(std::move(e));
  }
  json["absorbed"] = std::move(absorbed);
  return json.dump();
}

std::vector<std::string> FieldRoot::ActiveTokens() const {
  std::vector<std::string> out;
  for (const auto& cell : cells_) {
    if (cell.active) out.push_back(cell.token);
  }
  return out;
}

std::vector<std::string> FieldRoot::RetiringTokens() const {
  std::vector<std::string> out;
  for (const auto& cell : cells_) {
    if (!cell.active) out.push_back(cell.token);
  }
  return out;
}

bool FieldRoot::IsAbsorbed(std::string_view token) const {
  return std::any_of(absorbed_.begin(), absorbed_.end(),
                     [&](const AbsorbedCell& a) { return a.token == token; });
}

bool FieldRoot::HasCell(std::string_view token) const {
  return std::any_of(cells_.begin(), cells_.end(),
                     [&](const CellRef& c) { return c.token == token; });
}

std::vector<std::string> FieldRoot::UndeletedAbsorbed() const {
  std::vector<std::string> out;
  for (const auto& a : absorbed_) {
    if (!a.deleted_at.has_value()) out.push_back(a.token);
  }
  return out;
}

Status FieldRoot::AddCells(const std::vector<std::string>& tokens) {
  for (const auto& token : tokens) {
    if (token.empty() || HasCell(token) || IsAbsorbed(token)) {
      return InvalidArgumentError(fmt::format("cell {} cannot be added twice", token));
    }
  }
  for (const auto& token : tokens) cells_.push_back(CellRef{.token = token, .active = true});
  ++seq_;
  return OkStatus();
}

Status FieldRoot::Retire(const std::vector<std::string>& tokens) {
  for (const auto& token : tokens) {
    auto it = std::find_if(cells_.begin(), cells_.end(),
                           [&](const CellRef& c) { return c.token == token; });
    if (it == cells_.end()) return NotFoundError(fmt::format("no cell {}", token));
    it->active = false;
  }
  ++seq_;
  return OkStatus();
}

Status FieldRoot::Absorb(const Fold& fold, const std::vector<SealedCell>& sealed) {
  Value base = base_;
  std::vector<std::string> taken;
  for (const auto& cell : sealed) {
    if (IsAbsorbed(cell.token) ||
        std::find(taken.begin(), taken.end(), cell.token) != taken.end()) {
      continue;
    }
    SHOAL_ASSIGN_OR_RETURN(base, fold.Combine(base, cell.value));
    taken.push_back(cell.token);
  }
  ++seq_;
  base_ = std::move(base);
  for (const auto& token : taken) {
    std::erase_if(cells_, [&](const CellRef& c) { return c.token == token; });
    absorbed_.push_back(
        AbsorbedCell{.token = token, .absorbed_at = seq_, .deleted_at = std::nullopt});
  }
  return OkStatus();
}

void FieldRoot::RecordDeleted(const std::vector<std::string>& tokens) {
  ++seq_;
  for (auto& a : absorbed_) {
    if (!a.deleted_at.has_value() &&
        std::find(tokens.begin(), tokens.end(), a.token) != tokens.end()) {
      a.deleted_at = seq_;
    }
  }
  // R4: a read that saw one of these cells began at most kPruneLag root writes ago, or it
  // retries.
  std::erase_if(absorbed_, [&](const AbsorbedCell& a) {
    return a.deleted_at.has_value() && seq_ >= *a.deleted_at + kPruneLag;
  });
}

Status FieldRoot::CheckInvariants() const {
  std::set<std::string, std::less<>> seen;
  for (const auto& cell : cells_) {
    if (cell.token.empty()) return InternalError("R1: empty cell token");
    if (!seen.insert(cell.token).second) {
      return InternalError(fmt::format("R1: cell {} listed twice", cell.token));
    }
  }
  for (const auto& a : absorbed_) {
    if (!seen.insert(a.token).second) {
      return InternalError(
          fmt::format("R1: token {} both live and absorbed, or absorbed twice", a.token));
    }
    if (a.absorbed_at > seq_ ||
        (a.deleted_at.has_value() && (*a.deleted_at > seq_ || *a.deleted_at < a.absorbed_at))) {
      return InternalError(fmt::format("R3: absorbed entry {} is ahead of seq {}", a.token, seq_));
    }
  }
  return OkStatus();
}

}  // namespace shoal::hotspot
