#include "tools/shoal/demo_workload.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/common/random.h"
#include "src/storage/errors.h"

namespace shoal::tools::demo {
std::string PrimaryKey(uint64_t key) { return fmt::format("doc-{}", key); }

namespace {

std::string RandomPayload(Random& random) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string payload(kPayloadChars, ' ');
  for (char& c : payload) c = kAlphabet[random.Uniform(kAlphabet.size())];
  return payload;
}

std::string InitialBody(uint64_t key, Random& random) {
  return fmt::format(R"({{"id":{},"group":{},"payload":"{}"}})", key, key % 10,
                     RandomPayload(random));
}

// Later writes carry a revision so that no two acknowledged bodies of a key are equal.
std::string RevisedBody(uint64_t key, uint64_t revision, Random& random) {
  return fmt::format(R"({{"id":{},"group":{},"rev":{},"payload":"{}"}})", key, key % 10, revision,
                     RandomPayload(random));
}

}  // namespace

void Workload::RecordError(std::string_view what, const Status& status) {
  errors_.fetch_add(1);
  if (status.code() == StatusCode::kUnknown) unknown_.fetch_add(1);
  std::lock_guard<std::mutex> lock(samples_mu_);
  if (samples_.size() < kMaxErrorSamples) {
    samples_.push_back(fmt::format("{}: {}", what, status.ToString()));
  }
}

void Workload::RecordInconsistency(std::string message) {
  inconsistent_.fetch_add(1);
  std::lock_guard<std::mutex> lock(samples_mu_);
  if (samples_.size() < kMaxErrorSamples) samples_.push_back(std::move(message));
}

void Workload::Write(Shard& shard, WriteKind kind, uint64_t key, std::optional<std::string> body) {
  const std::string pk = PrimaryKey(key);
  StatusOr<uint64_t> result = 0;
  std::string_view name;
  switch (kind) {
    case WriteKind::kInsert:
      name = "insert";
      result = client_.Insert(collection_, pk, *body);
      break;
    case WriteKind::kUpdate:
      name = "update";
      result = client_.Update(collection_, pk, *body);
      break;
    case WriteKind::kUpsert:
      name = "upsert";
      result = client_.Upsert(collection_, pk, *body);
      break;
    case WriteKind::kDelete:
      name = "delete";
      result = client_.Delete(collection_, pk);
      break;
  }
  ops_.fetch_add(1);
  std::lock_guard<std::mutex> lock(shard.mu);
  KeyModel& model = shard.keys[key];
  if (result.ok()) {
    acknowledged_.fetch_add(1);
    model.last_ack = body.has_value() ? KeyModel::LastAck::kWrite : KeyModel::LastAck::kDelete;
    model.Settle(std::move(body));
    return;
  }
  const Status& status = result.status();
  if (kind == WriteKind::kInsert && storage::Is(status, storage::ErrorReason::kDuplicate)) {
    if (!model.ObservePresent()) {
      RecordInconsistency(fmt::format("insert {}: DUPLICATE, but the key should be absent", pk));
    }
    return;
  }
  if ((kind == WriteKind::kUpdate || kind == WriteKind::kDelete) &&
      storage::Is(status, storage::ErrorReason::kNotFound)) {
    if (!model.Observe(std::nullopt)) {
      RecordInconsistency(fmt::format("{} {}: NOT_FOUND, but the key should be present", name, pk));
    }
    return;
  }
  // kUnknown says so; a write that failed otherwise (retries exhausted) may have landed too.
  model.Widen(std::move(body));
  RecordError(fmt::format("{} {}", name, pk), status);
}

void Workload::Read(Shard& shard, uint64_t key) {
  const std::string pk = PrimaryKey(key);
  auto document = client_.Get(collection_, pk);
  ops_.fetch_add(1);
  std::optional<std::string> observed;
  if (document.ok()) {
    if (!document->tombstone) observed = std::move(document->body);
  } else if (!storage::Is(document.status(), storage::ErrorReason::kNotFound)) {
    RecordError(fmt::format("get {}", pk), document.status());
    return;
  }
  std::lock_guard<std::mutex> lock(shard.mu);
  KeyModel& model = shard.keys[key];
  // A stale or phantom read is kept out of the model so that the final check still sees the
  // writes it contradicts.
  if (!model.Observe(observed)) {
    RecordInconsistency(fmt::format("get {}: read {} which no acknowledged or pending write left",
                                    pk, observed.has_value() ? "a body" : "nothing"));
  }
}

void Workload::LoadShard(uint32_t index) {
  Shard& shard = shards_[index];
  Random random(runtime_.RandomU64());
  uint64_t count = 0;
  if (options_.documents > index) {
    count = (options_.documents - index + options_.clients - 1) / options_.clients;
  }
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.allocated = count;
  }
  for (uint64_t j = 0; j < count; ++j) {
    const uint64_t key = KeyOf(index, j);
    Write(shard, WriteKind::kInsert, key, InitialBody(key, random));
  }
}

void Workload::MixShard(uint32_t index) {
  Shard& shard = shards_[index];
  Random random(runtime_.RandomU64());
  while (!stop_.load()) {
    const uint64_t dice = random.Uniform(100);
    uint64_t key = 0;
    {
      std::lock_guard<std::mutex> lock(shard.mu);
      if (dice >= 90 || shard.allocated == 0) {
        key = KeyOf(index, shard.allocated++);  // a new key
      } else {
        key = KeyOf(index, random.Uniform(shard.allocated));
      }
    }
    if (dice < 50) {
      Read(shard, key);
    } else if (dice < 80) {
      const WriteKind kind = dice < 65 ? WriteKind::kUpdate : WriteKind::kUpsert;
      Write(shard, kind, key, RevisedBody(key, revision_.fetch_add(1) + 1, random));
    } else if (dice < 90) {
      Write(shard, WriteKind::kDelete, key, std::nullopt);
    } else {
      Write(shard, WriteKind::kInsert, key, InitialBody(key, random));
    }
  }
}

void Workload::VerifyShard(uint32_t index, Verification* out,
                           std::map<std::string, std::string>* live) {
  Shard& shard = shards_[index];
  std::lock_guard<std::mutex> lock(shard.mu);  // the workload is stopped: nobody waits on it
  for (auto& [key, model] : shard.keys) {
    const std::string pk = PrimaryKey(key);
    ++out->keys;
    auto document = client_.Get(collection_, pk);
    std::optional<std::string> observed;
    if (document.ok()) {
      if (!document->tombstone) observed = std::move(document->body);
    } else if (!storage::Is(document.status(), storage::ErrorReason::kNotFound)) {
      RecordError(fmt::format("verify get {}", pk), document.status());
      RecordInconsistency(fmt::format("verify get {}: cannot check it", pk));
      continue;
    }
    if (observed.has_value()) (*live)[pk] = *observed;
    if (model.Allows(observed)) continue;
    switch (model.last_ack) {
      case KeyModel::LastAck::kWrite:
        ++out->lost_writes;
        RecordInconsistency(
            fmt::format("lost write: {} is {}", pk, observed.has_value() ? "stale" : "missing"));
        break;
      case KeyModel::LastAck::kDelete:
        ++out->resurrected_deletes;
        RecordInconsistency(fmt::format("resurrected delete: {} is present", pk));
        break;
      case KeyModel::LastAck::kNone:
        RecordInconsistency(fmt::format("phantom: {} was never written but is present", pk));
        break;
    }
  }
}

Verification Workload::Verify() {
  std::vector<Verification> parts(options_.clients);
  std::vector<std::map<std::string, std::string>> lives(options_.clients);
  RunThreads([&](uint32_t index) { VerifyShard(index, &parts[index], &lives[index]); });
  JoinThreads();
  Verification result;
  std::map<std::string, std::string> live;
  for (uint32_t i = 0; i < options_.clients; ++i) {
    result.keys += parts[i].keys;
    result.lost_writes += parts[i].lost_writes;
    result.resurrected_deletes += parts[i].resurrected_deletes;
    live.merge(lives[i]);
  }
  result.live = live.size();

  std::map<std::string, uint64_t> returned;
  client::QueryOptions query;
  query.collection = collection_;
  query.limit = 1000;
  for (;;) {
    auto page = client_.Query(query);
    if (!page.ok()) {
      RecordError("query", page.status());
      break;
    }
    for (const auto& document : page->documents) {
      if (++returned[document.primary_key] > 1) {
        ++result.duplicate_query_results;
        continue;
      }
      auto it = live.find(document.primary_key);
      if (it == live.end()) {
        RecordInconsistency(
            fmt::format("query returned {}, which Get does not find", document.primary_key));
      } else if (it->second != document.body) {
        RecordInconsistency(
            fmt::format("query returned another body of {} than Get", document.primary_key));
      }
    }
    if (page->next_cursor.empty()) break;
    query.cursor = std::move(page->next_cursor);
  }
  for (const auto& [pk, body] : live) {
    if (returned.count(pk) == 0) ++result.missing_query_results;
  }
  return result;
}

}  // namespace shoal::tools::demo
