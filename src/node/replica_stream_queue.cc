#include "src/node/replica_stream_queue.h"

#include <algorithm>
#include <utility>

namespace shoal::node {

size_t EntryBytes(const storage::ReplicatedEntry& entry) {
  size_t bytes = 0;
  for (const storage::Document& d : entry.documents) bytes += d.primary_key.size() + d.body.size();
  return bytes;
}

void ReplicaStreamQueue::Push(storage::ReplicatedEntry entry) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(entry));
}

std::optional<std::vector<storage::ReplicatedEntry>> ReplicaStreamQueue::Take(int64_t now,
                                                                              bool keepalive) {
  absl::MutexLock lock(&mu_);
  if (in_flight_ || (queue_.empty() && !keepalive)) return std::nullopt;
  last_sent_ = now;
  size_t bytes = 0;
  while (!queue_.empty() && flight_.size() < limits_.max_writes) {
    const size_t next = EntryBytes(queue_.front());
    if (!flight_.empty() && bytes + next > limits_.max_bytes) break;
    bytes += next;
    flight_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  in_flight_ = true;
  return flight_;
}

void ReplicaStreamQueue::Delivered() {
  absl::MutexLock lock(&mu_);
  flight_.clear();
  in_flight_ = false;
}

void ReplicaStreamQueue::Failed() {
  absl::MutexLock lock(&mu_);
  for (auto it = flight_.rbegin(); it != flight_.rend(); ++it) queue_.push_front(std::move(*it));
  flight_.clear();
  in_flight_ = false;
}

void ReplicaStreamQueue::DropBucket(BucketId bucket) {
  absl::MutexLock lock(&mu_);
  const auto of_bucket = [bucket](const storage::ReplicatedEntry& e) { return e.bucket == bucket; };
  std::erase_if(queue_, of_bucket);
  std::erase_if(flight_, of_bucket);
}

size_t ReplicaStreamQueue::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

bool ReplicaStreamQueue::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

void ReplicaStreamQueue::Answered(int64_t now) {
  absl::MutexLock lock(&mu_);
  last_answer_ = std::max(last_answer_.value_or(now), now);
  refusal_.reset();
}

void ReplicaStreamQueue::Refused(Status why) {
  absl::MutexLock lock(&mu_);
  refusal_ = std::move(why);
}

std::optional<Status> ReplicaStreamQueue::refusal() const {
  absl::MutexLock lock(&mu_);
  return refusal_;
}

int64_t ReplicaStreamQueue::last_sent() const {
  absl::MutexLock lock(&mu_);
  return last_sent_;
}

int64_t ReplicaStreamQueue::last_answer(int64_t start) const {
  absl::MutexLock lock(&mu_);
  return last_answer_.value_or(start);
}

}  // namespace shoal::node
