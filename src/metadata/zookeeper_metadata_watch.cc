// The watches of ZooKeeperMetadataStore: the C client's watcher flags the store dirty, and the
// watch thread re-reads the watched keys, re-arming the ZooKeeper watches, and reports the
// differences (docs/design/zookeeper.md, "Watches").

#include <zookeeper/zookeeper.h>

#include <utility>

#include "src/metadata/zookeeper_metadata_store.h"

namespace shoal::metadata {

void ZooKeeperMetadataStore::WatchFired(zhandle_t* /*zh*/, int /*type*/, int /*state*/,
                                        const char* /*path*/, void* ctx) {
  // Runs on the client's completion thread, where synchronous calls would deadlock: only flag.
  auto* store = static_cast<ZooKeeperMetadataStore*>(ctx);
  {
    std::lock_guard lock(store->mu_);
    store->dirty_ = true;
  }
  store->watch_cv_.notify_all();
}

WatchId ZooKeeperMetadataStore::Watch(std::string prefix,
                                      std::function<void(const WatchEvent&)> fn) {
  Watcher watcher{
      .prefix = std::move(prefix),
      .fn = std::make_shared<const std::function<void(const WatchEvent&)>>(std::move(fn)),
      .seen = {}};
  // The baseline: changes after this read are reported. On a read error the first poll reports
  // every key as new, which at-least-once delivery allows.
  if (auto listed = ListKeys(watcher.prefix, true); listed.ok()) {
    for (const auto& [key, value] : *listed) watcher.seen.emplace(key, value.version);
  }
  std::lock_guard lock(mu_);
  const WatchId id(next_watch_++);
  watchers_.emplace(id, std::move(watcher));
  dirty_ = true;  // arm the key-list watch even if the baseline read failed
  watch_cv_.notify_all();
  return id;
}

void ZooKeeperMetadataStore::Unwatch(WatchId id) {
  std::unique_lock lock(mu_);
  watchers_.erase(id);
  if (std::this_thread::get_id() == watch_thread_.get_id()) return;  // from a callback
  call_done_cv_.wait(lock, [&] { return calling_watch_ != id; });
}

void ZooKeeperMetadataStore::WatchLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    // Re-polls every second too, so a watch lost with a connection is re-armed.
    watch_cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_ || dirty_; });
    if (stop_) return;
    dirty_ = false;
    lock.unlock();
    if (!Poll().ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      lock.lock();
      dirty_ = true;
      continue;
    }
    lock.lock();
  }
}

Status ZooKeeperMetadataStore::Poll() {
  std::vector<std::pair<WatchId, std::string>> prefixes;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, watcher] : watchers_) prefixes.emplace_back(id, watcher.prefix);
  }
  if (prefixes.empty()) return OkStatus();
  // One read of everything the watchers cover arms the list watch and every key's watch.
  std::string common = prefixes.front().second;
  for (const auto& [id, prefix] : prefixes) {
    size_t n = 0;
    while (n < common.size() && n < prefix.size() && common[n] == prefix[n]) ++n;
    common.resize(n);
  }
  SHOAL_ASSIGN_OR_RETURN(auto listed, ListKeys(common, true));
  for (const auto& [id, prefix] : prefixes) {
    std::vector<WatchEvent> events;
    std::shared_ptr<const std::function<void(const WatchEvent&)>> fn;
    {
      std::lock_guard lock(mu_);
      auto it = watchers_.find(id);
      if (it == watchers_.end()) continue;
      Watcher& watcher = it->second;
      fn = watcher.fn;
      std::map<std::string, uint64_t> now;
      for (const auto& [key, value] : listed) {
        if (!key.starts_with(prefix)) continue;
        now.emplace(key, value.version);
        auto seen = watcher.seen.find(key);
        if (seen == watcher.seen.end() || seen->second != value.version) {
          events.push_back(WatchEvent{.key = key, .value = value});
        }
      }
      for (const auto& [key, version] : watcher.seen) {
        if (!now.contains(key)) events.push_back(WatchEvent{.key = key, .value = std::nullopt});
      }
      watcher.seen = std::move(now);
      if (!events.empty()) calling_watch_ = id;
    }
    for (const WatchEvent& event : events) {
      {
        std::lock_guard lock(mu_);
        if (!watchers_.contains(id)) break;  // unwatched by an earlier event's callback
      }
      (*fn)(event);
    }
    {
      std::lock_guard lock(mu_);
      calling_watch_.reset();
    }
    call_done_cv_.notify_all();
  }
  return OkStatus();
}

}  // namespace shoal::metadata
