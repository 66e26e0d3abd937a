#pragma once

// The hot keys of `shoal status`: the keys the nodes report as their most written
// (hotspot::TopKSketch, docs/design/hotspot.md "Hot-key sketch on nodes"), the hottest across the
// cluster, ranked and shown by the rate each has for certain. Pure functions; thread-safe.

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/ids.h"
#include "src/transport/messages.h"

namespace shoal::tools {

// Hot keys shown by `status`: the hottest over every node.
inline constexpr size_t kStatusHotKeys = 10;

// A key is shown as hot only with at least this many writes per second for certain: its
// estimate less its error. A key written once within the sketch's half-life (10 s) has 0.07;
// in a stream of distinct keys, every key the sketch holds owes nearly all of its estimate to the
// counter it took over, so its estimate alone would show any key as hot.
inline constexpr double kStatusHotKeyMinWritesPerSecond = 0.1;

// One key a node reports among its hottest.
struct HotKeyRow {
  NodeId node;
  transport::HotKeyStat stat;

  // The rate the key has for certain (the sketch's estimate less its error).
  [[nodiscard]] double AtLeast() const;
};

// A primary key as text: printable ASCII as is, every other byte and the backslash as \xNN.
[[nodiscard]] std::string PrintableKey(std::string_view key);

// Keeps the rows of at least kStatusHotKeyMinWritesPerSecond for certain, the highest such rate
// first (ties by estimate, then node, collection, key), at most kStatusHotKeys.
void KeepHottest(std::vector<HotKeyRow>* rows);

// The rows for `status --json`: node, collection name (null if unknown) and id, key,
// writes_per_second (the estimate), error_per_second and writes_per_second_at_least.
[[nodiscard]] nlohmann::json HotKeysJson(const std::vector<HotKeyRow>& rows,
                                         const std::map<CollectionId, std::string>& names);

// The rows as `status` prints them (a line saying there are none if `rows` is empty).
[[nodiscard]] std::string HotKeysText(const std::vector<HotKeyRow>& rows,
                                      const std::map<CollectionId, std::string>& names);

}  // namespace shoal::tools
