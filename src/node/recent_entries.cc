#include "src/node/recent_entries.h"

#include "src/node/replica_stream_queue.h"

namespace shoal::node {

void RecentEntries::Add(const storage::ReplicatedEntry& entry) {
  absl::MutexLock lock(&mu_);
  Run& run = runs_[entry.bucket];
  if (!run.entries.empty()) {
    const uint64_t last = run.entries.back().position.rseq;
    if (entry.position.rseq <= last) {
      // A resend of an entry held: the run holds it already (the same (term, rseq) is the same
      // write), unless it diverges, which starts afresh.
      if (entry.position.rseq >= run.entries.front().position.rseq) {
        const auto& held = run.entries[entry.position.rseq - run.entries.front().position.rseq];
        if (held.position.term == entry.position.term) return;
      }
      run = Run{};
    } else if (entry.position.rseq != last + 1) {
      run = Run{};
    }
  }
  run.bytes += EntryBytes(entry);
  run.entries.push_back(entry);
  while (run.entries.size() > 1 && (run.entries.size() > kMaxEntries || run.bytes > kMaxBytes)) {
    run.bytes -= EntryBytes(run.entries.front());
    run.entries.pop_front();
  }
}

std::vector<storage::ReplicatedEntry> RecentEntries::After(BucketId bucket, uint64_t after) const {
  absl::MutexLock lock(&mu_);
  std::vector<storage::ReplicatedEntry> out;
  auto it = runs_.find(bucket);
  if (it == runs_.end()) return out;
  for (const storage::ReplicatedEntry& entry : it->second.entries) {
    if (entry.position.rseq > after) out.push_back(entry);
  }
  return out;
}

bool RecentEntries::NoneWrites(BucketId bucket, uint64_t after, uint64_t through,
                               CollectionId collection, std::string_view pk) const {
  if (through <= after) return true;
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(bucket);
  if (it == runs_.end() || it->second.entries.empty()) return false;
  const auto& entries = it->second.entries;
  const uint64_t first = entries.front().position.rseq;
  const uint64_t last = entries.back().position.rseq;
  if (first > after + 1 || last < through) return false;  // not all of them kept
  for (uint64_t rseq = after + 1; rseq <= through; ++rseq) {
    for (const storage::Document& d : entries[rseq - first].documents) {
      if (d.collection == collection && d.primary_key == pk) return false;
    }
  }
  return true;
}

uint64_t RecentEntries::FirstRseq(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(bucket);
  if (it == runs_.end() || it->second.entries.empty()) return 0;
  return it->second.entries.front().position.rseq;
}

void RecentEntries::Forget(BucketId bucket) {
  absl::MutexLock lock(&mu_);
  runs_.erase(bucket);
}

}  // namespace shoal::node
