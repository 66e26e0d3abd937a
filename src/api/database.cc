// The public API of include/shoal/shoal.h over a DatabaseBackend's client (database_impl.h).

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "include/shoal/shoal.h"
#include "src/api/database_impl.h"
#include "src/storage/collection_name.h"
#include "src/storage/errors.h"

namespace shoal {

namespace {

StatusOr<storage::FieldValue> ParseLiteral(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return InvalidArgumentError(fmt::format("not a JSON literal: {}", text));
  }
  if (json.is_null()) return storage::FieldValue(nullptr);
  if (json.is_boolean()) return storage::FieldValue(json.get<bool>());
  if (json.is_number_integer()) return storage::FieldValue(json.get<int64_t>());
  if (json.is_number()) return storage::FieldValue(json.get<double>());
  if (json.is_string()) return storage::FieldValue(json.get<std::string>());
  return InvalidArgumentError(fmt::format("filters compare with scalars only: {}", text));
}

storage::CompareOp ToCompareOp(Op op) {
  switch (op) {
    case Op::kEq:
      return storage::CompareOp::kEq;
    case Op::kNe:
      return storage::CompareOp::kNe;
    case Op::kLt:
      return storage::CompareOp::kLt;
    case Op::kLe:
      return storage::CompareOp::kLe;
    case Op::kGt:
      return storage::CompareOp::kGt;
    case Op::kGe:
      return storage::CompareOp::kGe;
  }
  return storage::CompareOp::kEq;
}

static_assert(kMaxBatchWrites == transport::kMaxBatchWrites);
static_assert(kMaxBatchBytes == transport::kMaxBatchBytes);

transport::WriteOp ToWriteOp(BatchOp op) {
  switch (op) {
    case BatchOp::kInsert:
      return transport::WriteOp::kInsert;
    case BatchOp::kUpdate:
      return transport::WriteOp::kUpdate;
    case BatchOp::kUpsert:
      return transport::WriteOp::kUpsert;
    case BatchOp::kDelete:
      return transport::WriteOp::kDelete;
    case BatchOp::kCompareAndSet:
      return transport::WriteOp::kCompareAndSet;
  }
  return transport::WriteOp::kUpsert;
}

Document ToPublic(storage::Document d) {
  return Document{.key = std::move(d.primary_key), .json = std::move(d.body), .version = d.version};
}

// The use of a write that can store a document where none is (CollectionUse).
CollectionUse UseOf(BatchOp op, uint64_t expected_version) {
  switch (op) {
    case BatchOp::kInsert:
    case BatchOp::kUpsert:
      return CollectionUse::kCreateIfMissing;
    case BatchOp::kCompareAndSet:
      return expected_version == 0 ? CollectionUse::kCreateIfMissing : CollectionUse::kMustExist;
    case BatchOp::kUpdate:
    case BatchOp::kDelete:
      return CollectionUse::kMustExist;
  }
  return CollectionUse::kMustExist;
}

}  // namespace

StatusOr<ResolvedCollection> Collection::Impl::Resolve(CollectionUse use) {
  if (auto known = Known(); known.has_value()) return *known;
  StatusOr<CollectionId> id = InternalError("unset");
  switch (use) {
    case CollectionUse::kCreateIfMissing:
      id = client->OpenCollection(name);
      break;
    case CollectionUse::kMustExist:
      id = client->FindCollection(name);
      break;
  }
  if (!id.ok()) return id.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (!known_.load(std::memory_order_relaxed)) {
    id_ = *id;
    hot_ = hot_for_(*id);
    known_.store(true, std::memory_order_release);
  }
  return ResolvedCollection{.id = id_, .hot = hot_.get()};
}

std::optional<ResolvedCollection> Collection::Impl::Known() const {
  if (!known_.load(std::memory_order_acquire)) return std::nullopt;
  return ResolvedCollection{.id = id_, .hot = hot_.get()};
}

Status Collection::Impl::InUserWords(const Status& status) const {
  const std::optional<ResolvedCollection> known = Known();
  if (status.ok() || !known.has_value()) return status;
  const std::string_view message = MessageOf(status);
  const std::string id = known->id.DebugString();
  const auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  std::string out;
  out.reserve(message.size() + name.size());
  for (size_t i = 0; i < message.size();) {
    if (message[i] == '"') {  // a quoted key or name: copied as is, escapes included
      const size_t start = i++;
      while (i < message.size() && message[i] != '"') i += message[i] == '\\' ? 2 : 1;
      i = std::min(i + 1, message.size());
      out.append(message.substr(start, i - start));
      continue;
    }
    const bool starts_word = i == 0 || !is_word(message[i - 1]);
    const bool is_id = starts_word && message.substr(i).starts_with(id) &&
                       (i + id.size() == message.size() || !is_word(message[i + id.size()]));
    // Only where the id stands for the collection ("collection c4", "c4 pk=..."): other
    // tokens of the same spelling (a sharded field's cells) are left alone.
    if (is_id && out.ends_with("collection ")) {
      out += fmt::format("{:?}", name);
      i += id.size();
      continue;
    }
    if (is_id && message.substr(i + id.size()).starts_with(" pk=")) {
      out += fmt::format("collection {:?}", name);
      i += id.size();
      continue;
    }
    if (starts_word && message.substr(i).starts_with("pk=")) {
      out += "key ";
      i += 3;
      continue;
    }
    out += message[i++];
  }
  Status result = MakeStatus(status.code(), out);
  status.ForEachPayload([&result](std::string_view url, std::string_view payload) {
    result.SetPayload(url, payload);
  });
  return result;
}

// Writes refuse bodies that set a declared sharded field (CheckWrite): those change by Apply.
StatusOr<uint64_t> Collection::Insert(std::string_view key, std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kCreateIfMissing));
  SHOAL_RETURN_IF_ERROR(c.hot->CheckWrite(json));
  return impl_->InUserWords(impl_->client->Insert(c.id, key, json));
}
StatusOr<uint64_t> Collection::Update(std::string_view key, std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  SHOAL_RETURN_IF_ERROR(c.hot->CheckWrite(json));
  return impl_->InUserWords(impl_->client->Update(c.id, key, json));
}
StatusOr<uint64_t> Collection::Upsert(std::string_view key, std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kCreateIfMissing));
  SHOAL_RETURN_IF_ERROR(c.hot->CheckWrite(json));
  return impl_->InUserWords(impl_->client->Upsert(c.id, key, json));
}
StatusOr<uint64_t> Collection::Delete(std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  SHOAL_ASSIGN_OR_RETURN(uint64_t version, impl_->InUserWords(impl_->client->Delete(c.id, key)));
  // The document is gone: its sharded fields start again from neutral.
  SHOAL_RETURN_IF_ERROR(c.hot->AfterDelete(key));
  return version;
}
StatusOr<uint64_t> Collection::CompareAndSet(std::string_view key, uint64_t expected_version,
                                             std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(UseOf(BatchOp::kCompareAndSet, expected_version)));
  SHOAL_RETURN_IF_ERROR(c.hot->CheckWrite(json));
  return impl_->InUserWords(impl_->client->CompareAndSet(c.id, key, expected_version, json));
}
StatusOr<std::vector<StatusOr<uint64_t>>> Collection::Batch(std::span<const BatchWrite> writes) {
  std::vector<transport::WriteRequest> requests;
  requests.reserve(writes.size());
  CollectionUse use = CollectionUse::kMustExist;
  for (const BatchWrite& write : writes) {
    const bool del = write.op == BatchOp::kDelete;
    requests.push_back(transport::WriteRequest{.epoch = {},
                                               .op = ToWriteOp(write.op),
                                               .collection = {},
                                               .primary_key = write.key,
                                               .body = del ? std::string() : write.json,
                                               .expected_version = write.expected_version,
                                               .via_move = std::nullopt});
    if (UseOf(write.op, write.expected_version) == CollectionUse::kCreateIfMissing) {
      use = CollectionUse::kCreateIfMissing;
    }
  }
  // A bad batch fails whole before anything is sent.
  SHOAL_RETURN_IF_ERROR(transport::ValidateBatch(requests));
  auto c = impl_->Resolve(use);
  if (!c.ok()) {
    // A missing collection that none of the writes may create fails each write, as it would
    // fail each of them alone; any other failure is the call's.
    if (!storage::Is(c.status(), storage::ErrorReason::kUnknownCollection)) return c.status();
    return std::vector<StatusOr<uint64_t>>(writes.size(), c.status());
  }
  // As single writes: a write that sets a declared sharded field fails in its own slot.
  std::vector<std::optional<StatusOr<uint64_t>>> results(writes.size());
  std::vector<size_t> sent_index;
  std::vector<transport::WriteRequest> sent;
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].op != BatchOp::kDelete) {
      if (Status s = c->hot->CheckWrite(writes[i].json); !s.ok()) {
        results[i] = std::move(s);
        continue;
      }
    }
    requests[i].collection = c->id;
    sent_index.push_back(i);
    sent.push_back(std::move(requests[i]));
  }
  if (!sent.empty()) {
    SHOAL_ASSIGN_OR_RETURN(auto answers, impl_->client->Batch(std::move(sent)));
    for (size_t k = 0; k < answers.size(); ++k) {
      const size_t i = sent_index[k];
      if (answers[k].ok() && writes[i].op == BatchOp::kDelete) {
        // As Delete: the document is gone, its sharded fields start again from neutral.
        if (Status s = c->hot->AfterDelete(writes[i].key); !s.ok()) answers[k] = std::move(s);
      }
      results[i] = impl_->InUserWords(std::move(answers[k]));
    }
  }
  std::vector<StatusOr<uint64_t>> out;
  out.reserve(results.size());
  for (auto& result : results) out.push_back(std::move(*result));
  return out;
}

StatusOr<Document> Collection::Get(std::string_view key) { return Get(key, ReadOptions{}); }
namespace {

// The query without its collection, which the caller sets once the collection is resolved.
StatusOr<client::QueryOptions> ToClientQuery(const QueryOptions& options) {
  client::QueryOptions query{
      .collection = {}, .filter = {}, .limit = options.limit, .cursor = options.cursor};
  for (const Condition& condition : options.filter) {
    SHOAL_ASSIGN_OR_RETURN(storage::FieldValue value, ParseLiteral(condition.json_value));
    query.filter.all_of.push_back(storage::FieldPredicate{
        .path = condition.path, .op = ToCompareOp(condition.op), .value = std::move(value)});
  }
  return query;
}

}  // namespace

StatusOr<QueryPage> Collection::Query(const QueryOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(client::QueryOptions query, ToClientQuery(options));
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  query.collection = c.id;
  SHOAL_ASSIGN_OR_RETURN(client::QueryPage page,
                         impl_->InUserWords(c.hot->Query(std::move(query))));
  QueryPage out;
  out.next_cursor = std::move(page.next_cursor);
  for (auto& document : page.documents) out.documents.push_back(ToPublic(std::move(document)));
  return out;
}

Status Collection::QueryStream(const QueryOptions& options,
                               const std::function<Status(const Document&)>& fn) {
  SHOAL_ASSIGN_OR_RETURN(client::QueryOptions query, ToClientQuery(options));
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  query.collection = c.id;
  return impl_->InUserWords(c.hot->QueryStream(std::move(query), [&fn](storage::Document document) {
    return fn(ToPublic(std::move(document)));
  }));
}

Database::Database(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Database::~Database() { (void)Close(); }

StatusOr<Collection> Database::GetCollection(std::string_view name) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateCollectionName(name));
  if (name.starts_with(hotspot::kSystemPrefix)) {
    return InvalidArgumentError(
        fmt::format("collection names starting with {} are reserved", hotspot::kSystemPrefix));
  }
  auto collection =
      std::make_shared<Collection::Impl>(impl_->client, std::string(name),
                                         [db = impl_.get(), name = std::string(name)](
                                             CollectionId id) { return db->HotFor(name, id); });
  // An existing collection is resolved now; a missing one by its first operation (Resolve).
  if (auto found = collection->Resolve(CollectionUse::kMustExist);
      !found.ok() && !storage::Is(found.status(), storage::ErrorReason::kUnknownCollection)) {
    return found.status();
  }
  return Collection(std::move(collection));
}

StatusOr<Collection> Database::CreateCollection(std::string_view name) {
  SHOAL_ASSIGN_OR_RETURN(Collection collection, GetCollection(name));
  SHOAL_RETURN_IF_ERROR(collection.impl_->Resolve(CollectionUse::kCreateIfMissing).status());
  return collection;
}

StatusOr<uint32_t> Database::AddNode() { return impl_->backend->AddNode(); }

Status Database::RemoveNode(uint32_t node) { return impl_->backend->RemoveNode(node); }

void Database::WaitAsync() { impl_->client->WaitAsync(); }

Status Database::Close() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return OkStatus();
    impl_->closed = true;
  }
  impl_->client->WaitAsync();
  impl_->StopMaintainer();
  return impl_->backend->Shutdown();
}

}  // namespace shoal
