#pragma once

// CellState: the content of one cell document of a sharded field, and its body codec
// (docs/design/hotspot.md, "Cell body").
//
// Every cell update decodes one body and encodes one, so the codec is on the hot path. Bodies
// must be JSON objects (storage intake); the writer emits one fixed shape, member order included:
//   {"v":V,"n":N}                  open static/auto cell (N updates applied, for shrinking)
//   {"v":V,"n":N,"s":1}            sealed cell (P2: never changes again)
//   {"v":V,"n":N,"s":1,"owner":O}  dynamic cell (O is the hex of the cell's (key, field); the
//                                   owner query filters on it)
// Decode reads that shape without a JSON DOM when V is an integer (sum, count, bit_or and most
// min/max counters). Any other body goes through a general JSON parse, which also reads the
// format written before this codec: nlohmann's sorted members with "sealed": true instead of
// "s": 1, and "n" left out when zero, e.g. {"n":9,"sealed":true,"v":4}. Both readers give the
// same CellState for the same content; a body without "v" is kDataLoss.
//
// Value type; thread-compatible.

#include <cstdint>
#include <string>
#include <string_view>

#include "src/common/status.h"
#include "src/hotspot/fold.h"

namespace shoal::hotspot {

struct CellState {
  Value value;
  bool sealed = false;
  uint64_t updates = 0;  // static/auto cells: updates applied (for the shrink decision)
  std::string owner;     // dynamic cells: the hex of the (primary key, field) they belong to

  [[nodiscard]] static StatusOr<CellState> Decode(std::string_view body);
  [[nodiscard]] std::string Encode() const;
};

}  // namespace shoal::hotspot
