// Collection's asynchronous operations (include/shoal/shoal.h) over Client's (client.h).
//
// A collection with declared sharded fields, or whose schema is not cached, or that is not
// resolved yet (database_impl.h, CollectionUse), runs the synchronous operation on a client task
// instead: its writes are checked against the schema, its deletes reset the declared fields, its
// reads fold them and its resolution asks the cluster, all of which may wait.

#include <optional>
#include <string>
#include <utility>

#include "include/shoal/shoal.h"
#include "src/api/database_impl.h"

namespace shoal {

namespace {

transport::WriteRequest PlainWrite(CollectionId collection, transport::WriteOp op,
                                   std::string_view key, std::string_view json) {
  return transport::WriteRequest{.epoch = {},
                                 .op = op,
                                 .collection = collection,
                                 .primary_key = std::string(key),
                                 .body = std::string(json),
                                 .expected_version = 0,
                                 .via_move = std::nullopt};
}

// A plain collection's write goes through the client's pipeline; any other, and any write to a
// collection not resolved yet, runs `blocking` (the synchronous Collection call, with its schema
// checks and its resolution) on a client task.
void WriteAsyncOr(client::Client& client, const std::optional<ResolvedCollection>& known,
                  transport::WriteOp op, std::string_view key, std::string_view json,
                  std::function<StatusOr<uint64_t>()> blocking, Collection::WriteCallback done) {
  if (!known.has_value() || !known->hot->KnownPlain()) {
    client.RunAsync([blocking = std::move(blocking), done = std::move(done)] { done(blocking()); });
    return;
  }
  client.WriteAsync(PlainWrite(known->id, op, key, json), std::move(done));
}

// `done`, given its result in the caller's words (Collection::Impl::InUserWords). `impl` is the
// collection's Impl, kept alive by the callback.
template <typename ImplPtr, typename Callback>
Callback InUserWords(const ImplPtr& impl, Callback done) {
  return
      [impl, done = std::move(done)](auto result) { done(impl->InUserWords(std::move(result))); };
}

}  // namespace

void Collection::InsertAsync(std::string_view key, std::string_view json, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->Known(), transport::WriteOp::kInsert, key, json,
      [c = *this, k = std::string(key), j = std::string(json)]() mutable { return c.Insert(k, j); },
      InUserWords(impl_, std::move(done)));
}

void Collection::UpdateAsync(std::string_view key, std::string_view json, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->Known(), transport::WriteOp::kUpdate, key, json,
      [c = *this, k = std::string(key), j = std::string(json)]() mutable { return c.Update(k, j); },
      InUserWords(impl_, std::move(done)));
}

void Collection::UpsertAsync(std::string_view key, std::string_view json, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->Known(), transport::WriteOp::kUpsert, key, json,
      [c = *this, k = std::string(key), j = std::string(json)]() mutable { return c.Upsert(k, j); },
      InUserWords(impl_, std::move(done)));
}

void Collection::DeleteAsync(std::string_view key, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->Known(), transport::WriteOp::kDelete, key, "",
      [c = *this, k = std::string(key)]() mutable { return c.Delete(k); },
      InUserWords(impl_, std::move(done)));
}

void Collection::GetAsync(std::string_view key, GetCallback done) {
  const auto known = impl_->Known();
  if (!known.has_value() || !known->hot->KnownPlain()) {
    impl_->client->RunAsync(
        [c = *this, k = std::string(key), done = std::move(done)]() mutable { done(c.Get(k)); });
    return;
  }
  impl_->client->GetAsync(
      known->id, std::string(key),
      [impl = impl_, done = std::move(done)](StatusOr<storage::Document> d) {
        if (!d.ok()) return done(impl->InUserWords(d.status()));
        done(Document{
            .key = std::move(d->primary_key), .json = std::move(d->body), .version = d->version});
      });
}

}  // namespace shoal
