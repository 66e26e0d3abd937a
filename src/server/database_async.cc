// Collection's asynchronous operations (include/shoal/shoal.h) over Client's (client.h).
//
// A collection with declared sharded fields, or whose schema is not cached, runs the
// synchronous operation on a client task instead: its writes are checked against the schema,
// its deletes reset the declared fields and its reads fold them, all of which may wait.

#include <string>
#include <utility>

#include "include/shoal/shoal.h"
#include "src/server/database_impl.h"

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

// A plain collection's write goes through the client's pipeline; any other runs `blocking`
// (the synchronous Collection call, with its schema checks) on a client task.
void WriteAsyncOr(client::Client& client, CollectionId collection, hotspot::HotCollection& hot,
                  transport::WriteOp op, std::string_view key, std::string_view json,
                  std::function<StatusOr<uint64_t>()> blocking, Collection::WriteCallback done) {
  if (!hot.KnownPlain()) {
    client.RunAsync([blocking = std::move(blocking), done = std::move(done)] { done(blocking()); });
    return;
  }
  client.WriteAsync(PlainWrite(collection, op, key, json), std::move(done));
}

}  // namespace

void Collection::InsertAsync(std::string_view key, std::string_view json, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->id, *impl_->hot, transport::WriteOp::kInsert, key, json,
      [c = *this, k = std::string(key), j = std::string(json)]() mutable { return c.Insert(k, j); },
      std::move(done));
}

void Collection::UpdateAsync(std::string_view key, std::string_view json, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->id, *impl_->hot, transport::WriteOp::kUpdate, key, json,
      [c = *this, k = std::string(key), j = std::string(json)]() mutable { return c.Update(k, j); },
      std::move(done));
}

void Collection::UpsertAsync(std::string_view key, std::string_view json, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->id, *impl_->hot, transport::WriteOp::kUpsert, key, json,
      [c = *this, k = std::string(key), j = std::string(json)]() mutable { return c.Upsert(k, j); },
      std::move(done));
}

void Collection::DeleteAsync(std::string_view key, WriteCallback done) {
  WriteAsyncOr(
      *impl_->client, impl_->id, *impl_->hot, transport::WriteOp::kDelete, key, "",
      [c = *this, k = std::string(key)]() mutable { return c.Delete(k); }, std::move(done));
}

void Collection::GetAsync(std::string_view key, GetCallback done) {
  if (!impl_->hot->KnownPlain()) {
    impl_->client->RunAsync(
        [c = *this, k = std::string(key), done = std::move(done)]() mutable { done(c.Get(k)); });
    return;
  }
  impl_->client->GetAsync(
      impl_->id, std::string(key), [done = std::move(done)](StatusOr<storage::Document> d) {
        if (!d.ok()) return done(d.status());
        done(Document{
            .key = std::move(d->primary_key), .json = std::move(d->body), .version = d->version});
      });
}

}  // namespace shoal
