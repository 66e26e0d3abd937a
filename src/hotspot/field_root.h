#pragma once

// FieldRoot: the pure model of one sharded field of one document (docs/design/hotspot.md).
//
// Storage layout (all in the collection's hidden cell collection, see keys.h):
//   root   {"base": V, "seq": S, "cells": [{"t": T, "active": B}], "absorbed": [{"t","at","del"}]}
//   cell   value V, sealed flag, updates applied, owner (dynamic fields: one cell per update);
//          the body's codec is CellState (cell_state.h)
// The field's value is  base ⊕ (⊕ of the values of cells whose token is not absorbed).
//
// Invariants (CheckInvariants; proofs in docs/design/hotspot.md):
//   R1 tokens are unique: a token is in `cells` or in `absorbed`, never in both, never twice.
//   R2 a token enters `absorbed` in the same root write that folds the cell's final (sealed)
//      value into `base`, so that no read can count it twice.
//   R3 every root write increments `seq`; at <= seq, del <= seq.
//   R4 an absorbed entry is pruned only when its cell is deleted and seq >= del + kPruneLag. A
//      read that spans fewer than kPruneLag root writes therefore still sees every token whose
//      cell it may have read (reads retry otherwise).
// Protocol rules the store follows (not checkable on one root):
//   P1 a cell is created (neutral, unsealed) before its token is published in `cells`.
//   P2 a cell is sealed (a CAS on the cell) before it is absorbed; a sealed cell never changes.
//   P3 an updater never creates a cell: a missing or sealed cell sends it back to the root.
//
// Value type; thread-compatible.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"
#include "src/hotspot/fold.h"

namespace shoal::hotspot {

inline constexpr uint64_t kPruneLag = 8;

struct CellRef {
  std::string token;
  bool active = true;  // false: retiring (updaters avoid it; it is being sealed and absorbed)
};

struct AbsorbedCell {
  std::string token;
  uint64_t absorbed_at = 0;            // seq of the root write that absorbed it
  std::optional<uint64_t> deleted_at;  // seq recorded after the cell document was deleted
};

struct SealedCell {
  std::string token;
  Value value;
};

class FieldRoot {
 public:
  // A root with no cells and `base` (the fold's neutral).
  [[nodiscard]] static FieldRoot Empty(Value base);
  [[nodiscard]] static StatusOr<FieldRoot> Decode(std::string_view body);
  [[nodiscard]] std::string Encode() const;

  [[nodiscard]] const Value& base() const { return base_; }
  [[nodiscard]] uint64_t seq() const { return seq_; }
  [[nodiscard]] const std::vector<CellRef>& cells() const { return cells_; }
  [[nodiscard]] const std::vector<AbsorbedCell>& absorbed() const { return absorbed_; }
  [[nodiscard]] std::vector<std::string> ActiveTokens() const;
  [[nodiscard]] std::vector<std::string> RetiringTokens() const;
  [[nodiscard]] bool IsAbsorbed(std::string_view token) const;
  [[nodiscard]] bool HasCell(std::string_view token) const;
  // Absorbed entries whose cell document has not been recorded as deleted.
  [[nodiscard]] std::vector<std::string> UndeletedAbsorbed() const;

  // Edits; each is one root write and increments seq.
  // Publishes new active cells (P1: they must exist already).
  [[nodiscard]] Status AddCells(const std::vector<std::string>& tokens);
  // Marks active cells as retiring.
  [[nodiscard]] Status Retire(const std::vector<std::string>& tokens);
  // Folds each sealed cell not yet absorbed into base and moves its token to `absorbed` (R2);
  // tokens already absorbed are skipped, so a repeated absorb is harmless.
  [[nodiscard]] Status Absorb(const Fold& fold, const std::vector<SealedCell>& sealed);
  // Records that these absorbed cells' documents are deleted, and prunes entries (R4).
  void RecordDeleted(const std::vector<std::string>& tokens);

  [[nodiscard]] Status CheckInvariants() const;

 private:
  Value base_;
  uint64_t seq_ = 0;
  std::vector<CellRef> cells_;
  std::vector<AbsorbedCell> absorbed_;
};

}  // namespace shoal::hotspot
