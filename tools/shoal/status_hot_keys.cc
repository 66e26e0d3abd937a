#include "tools/shoal/status_hot_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace shoal::tools {

double HotKeyRow::AtLeast() const {
  return std::max(0.0, stat.writes_per_second - stat.error_per_second);
}

std::string PrintableKey(std::string_view key) {
  std::string out;
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

void KeepHottest(std::vector<HotKeyRow>* rows) {
  std::erase_if(
      *rows, [](const HotKeyRow& row) { return row.AtLeast() < kStatusHotKeyMinWritesPerSecond; });
  std::sort(rows->begin(), rows->end(), [](const HotKeyRow& a, const HotKeyRow& b) {
    if (a.AtLeast() != b.AtLeast()) return a.AtLeast() > b.AtLeast();
    if (a.stat.writes_per_second != b.stat.writes_per_second) {
      return a.stat.writes_per_second > b.stat.writes_per_second;
    }
    return std::tie(a.node, a.stat.collection, a.stat.primary_key) <
           std::tie(b.node, b.stat.collection, b.stat.primary_key);
  });
  if (rows->size() > kStatusHotKeys) rows->resize(kStatusHotKeys);
}

nlohmann::json HotKeysJson(const std::vector<HotKeyRow>& rows,
                           const std::map<CollectionId, std::string>& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const HotKeyRow& row : rows) {
    auto name = names.find(row.stat.collection);
    out.push_back({{"node", row.node.value()},
                   {"collection",
                    name == names.end() ? nlohmann::json(nullptr) : nlohmann::json(name->second)},
                   {"collection_id", row.stat.collection.value()},
                   {"key", PrintableKey(row.stat.primary_key)},
                   {"writes_per_second", row.stat.writes_per_second},
                   {"error_per_second", row.stat.error_per_second},
                   {"writes_per_second_at_least", row.AtLeast()}});
  }
  return out;
}

std::string HotKeysText(const std::vector<HotKeyRow>& rows,
                        const std::map<CollectionId, std::string>& names) {
  if (rows.empty()) {
    return fmt::format("hot keys: none of {:.1f} writes/s or more\n",
                       kStatusHotKeyMinWritesPerSecond);
  }
  std::string out = "hot keys (writes/s: at least, and at most):\n";
  out += fmt::format("{:<6} {:<16} {:<32} {:>10} {:>10}\n", "node", "collection", "key", "writes/s",
                     "at most");
  for (const HotKeyRow& row : rows) {
    auto name = names.find(row.stat.collection);
    const std::string collection =
        name == names.end() ? std::to_string(row.stat.collection.value()) : name->second;
    out +=
        fmt::format("{:<6} {:<16} {:<32} {:>10.2f} {:>10.2f}\n", row.node.value(), collection,
                    PrintableKey(row.stat.primary_key), row.AtLeast(), row.stat.writes_per_second);
  }
  return out;
}

}  // namespace shoal::tools
