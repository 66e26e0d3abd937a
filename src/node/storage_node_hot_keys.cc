// The hot-key sketch of StorageNode: what it counts and what the load report carries
// (docs/design/hotspot.md, "Hot-key sketch on nodes"; storage_node.h, HOT KEYS).

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/node/storage_node.h"

namespace shoal::node {

namespace {

// Hot keys reported per load request.
constexpr size_t kReportedHotKeys = 10;
// A key of the hot-key sketch: the collection id in kCollectionBytes big-endian bytes, then the
// primary key.
constexpr size_t kCollectionBytes = 4;

std::string HotKeyOf(CollectionId collection, std::string_view primary_key) {
  std::string key(kCollectionBytes, '\0');
  for (size_t i = 0; i < kCollectionBytes; ++i) {
    key[i] = static_cast<char>(collection.value() >> (8 * (kCollectionBytes - 1 - i)));
  }
  key.append(primary_key);
  return key;
}

}  // namespace

void StorageNode::RecordWrite(CollectionId collection, std::string_view primary_key) {
  const std::string key = HotKeyOf(collection, primary_key);
  const auto now = static_cast<uint64_t>(std::max<transport::Micros>(0, runtime_.Now()));
  absl::MutexLock lock(&hot_keys_mu_);
  hot_keys_.Add(key, now);
}

std::vector<transport::HotKeyStat> StorageNode::HotKeys() {
  const auto now = static_cast<uint64_t>(std::max<transport::Micros>(0, runtime_.Now()));
  std::vector<hotspot::HotKey> top;
  {
    absl::MutexLock lock(&hot_keys_mu_);
    top = hot_keys_.Top(kReportedHotKeys, now);
  }
  std::vector<transport::HotKeyStat> out;
  for (const hotspot::HotKey& hot : top) {
    if (hot.key.size() < kCollectionBytes) continue;  // not written by HotKeyOf
    uint32_t collection = 0;
    for (size_t i = 0; i < kCollectionBytes; ++i) {
      collection = (collection << 8) | static_cast<uint8_t>(hot.key[i]);
    }
    out.push_back(transport::HotKeyStat{.collection = CollectionId(collection),
                                        .primary_key = hot.key.substr(kCollectionBytes),
                                        .writes_per_second = hot.writes_per_second,
                                        .error_per_second = hot.error_per_second});
  }
  return out;
}

}  // namespace shoal::node
