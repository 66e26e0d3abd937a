// Responses of src/transport/messages.h <-> proto/shoal.proto (requests: wire_messages.cc).

#include <fmt/format.h>

#include <vector>

#include "src/common/overloaded.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

void ToWire(const transport::Response& response, wire::Response* out) {
  ToWire(response.status, out->mutable_status());
  out->set_route(EncodeMap(response.route));
  std::visit(Overloaded{
                 [out](const transport::Ack&) { out->mutable_ack(); },
                 [out](const transport::WriteResponse& r) {
                   out->mutable_write()->set_version(r.version);
                 },
                 [out](const transport::GetResponse& r) {
                   ToWire(r.document, out->mutable_get()->mutable_document());
                 },
                 [out](const transport::ScanResponse& r) {
                   auto* w = out->mutable_scan();
                   for (const auto& d : r.documents) ToWire(d, w->add_documents());
                   w->set_next_cursor(r.next_cursor);
                 },
                 [out](const transport::GetMapResponse& r) {
                   ToWire(r.state, out->mutable_get_map()->mutable_state());
                 },
                 [out](const transport::HeartbeatResponse& r) {
                   out->mutable_heartbeat()->set_epoch(r.epoch.value());
                   QuiescedToWire(r.released, out->mutable_heartbeat()->mutable_released());
                 },
                 [out](const transport::CreateCollectionResponse& r) {
                   auto* spec = out->mutable_create_collection()->mutable_collection();
                   spec->set_id(r.collection.id.value());
                   spec->set_name(r.collection.name);
                 },
                 [out](const transport::ExportBucketResponse& r) {
                   ToWire(r.exported, out->mutable_export_bucket()->mutable_exported());
                 },
                 [out](const transport::CatchUpResponse& r) {
                   out->mutable_catch_up()->set_applied_sequence(r.applied_sequence);
                   out->mutable_catch_up()->set_applied(r.applied);
                   out->mutable_catch_up()->set_read_micros(r.read_micros);
                   out->mutable_catch_up()->set_apply_micros(r.apply_micros);
                   out->mutable_catch_up()->set_applied_bytes(r.applied_bytes);
                 },
                 [out](const transport::ResumeCopyResponse& r) {
                   auto* w = out->mutable_resume_copy();
                   w->set_resumed(r.sequence.has_value());
                   w->set_sequence(r.sequence.value_or(0));
                   w->set_refused(r.refused);
                   w->set_term(r.position.term.value());
                   w->set_rseq(r.position.rseq);
                 },
                 [out](const transport::ReadChangesResponse& r) {
                   auto* w = out->mutable_read_changes();
                   for (const auto& d : r.changes) ToWire(d, w->add_changes());
                   w->set_next_sequence(r.next_sequence);
                 },
                 [out](const transport::FenceResponse& r) {
                   out->mutable_fence()->set_sequence(r.sequence);
                   if (r.replica.has_value()) {
                     ToWire(*r.replica, out->mutable_fence()->mutable_replica());
                   }
                 },
                 [out](const transport::ReplicateResponse& r) {
                   auto* w = out->mutable_replicate();
                   for (const transport::ReplicaAck& a : r.acks) {
                     auto* ack = w->add_acks();
                     ack->set_bucket(a.bucket.value());
                     ToWire(a.status, ack->mutable_status());
                     ack->set_term(a.position.term.value());
                     ack->set_rseq(a.position.rseq);
                   }
                 },
                 [out](const transport::SealTermResponse& r) {
                   auto* w = out->mutable_seal_term();
                   w->set_store_id(r.store_id);
                   for (const transport::SealedBucket& b : r.buckets) {
                     auto* sealed = w->add_buckets();
                     sealed->set_bucket(b.bucket.value());
                     sealed->set_term(b.position.term.value());
                     sealed->set_rseq(b.position.rseq);
                     sealed->set_micros_since_ack(b.micros_since_ack);
                   }
                 },
                 [out](const transport::BucketLoadResponse& r) {
                   auto* w = out->mutable_bucket_load();
                   for (const auto& b : r.buckets) {
                     auto* load = w->add_buckets();
                     load->set_bucket(b.bucket.value());
                     load->set_bytes(b.bytes);
                     load->set_documents(b.documents);
                     load->set_reads_per_second(b.reads_per_second);
                     load->set_writes_per_second(b.writes_per_second);
                   }
                   if (r.disk.has_value()) {
                     w->mutable_disk()->set_free_bytes(r.disk->free_bytes);
                     w->mutable_disk()->set_reserve_bytes(r.disk->reserve_bytes);
                   }
                   for (const auto& h : r.hot_keys) {
                     auto* hot = w->add_hot_keys();
                     hot->set_collection(h.collection.value());
                     hot->set_primary_key(h.primary_key);
                     hot->set_writes_per_second(h.writes_per_second);
                     hot->set_error_per_second(h.error_per_second);
                   }
                   for (const auto& h : r.held) {
                     auto* held = w->add_held();
                     held->set_bucket(h.bucket.value());
                     ToWire(h.range, held->mutable_range());
                     held->set_term(h.position.term.value());
                     held->set_rseq(h.position.rseq);
                   }
                 },
                 [out](const transport::TransferBucketResponse& r) {
                   auto* w = out->mutable_transfer_bucket();
                   w->set_next_cursor(r.next_cursor);
                   w->set_documents(r.documents);
                   w->set_bytes(r.bytes);
                 },
                 [out](const transport::BatchWriteResponse& r) {
                   auto* w = out->mutable_batch_write();
                   w->mutable_results()->Reserve(static_cast<int>(r.results.size()));
                   for (const auto& result : r.results) {
                     auto* one = w->add_results();
                     ToWire(result.status, one->mutable_status());
                     one->set_version(result.version);
                   }
                 },
                 [out](const transport::BatchGetResponse& r) {
                   auto* w = out->mutable_batch_get();
                   w->mutable_results()->Reserve(static_cast<int>(r.results.size()));
                   for (const auto& result : r.results) {
                     auto* one = w->add_results();
                     ToWire(result.status, one->mutable_status());
                     if (result.status.ok()) ToWire(result.document, one->mutable_document());
                   }
                 },
                 [out](const transport::FetchMoveFileResponse& r) {
                   auto* w = out->mutable_fetch_move_file();
                   w->set_data(r.data);
                   w->set_chunk_crc32c(r.chunk_crc32c);
                   w->set_file_bytes(r.file_bytes);
                   w->set_file_crc32c(r.file_crc32c);
                   w->set_file_count(r.file_count);
                 },
             },
             response.body);
}

void ToWireAnswering(const wire::Request& request, const transport::Response& response,
                     wire::Response* out) {
  ToWire(response, out);
  if (!request.has_get_map() || !request.get_map().structured()) return;
  const auto* body = std::get_if<transport::GetMapResponse>(&response.body);
  if (body != nullptr && body->state.map != nullptr) {
    ToWire(*body->state.map, out->mutable_get_map()->mutable_map());
  }
}

StatusOr<transport::Response> FromWire(const wire::Response& response) {
  transport::Response out;
  out.status = FromWire(response.status());
  SHOAL_ASSIGN_OR_RETURN(out.route, DecodeMap(response.route()));
  switch (response.body_case()) {
    case wire::Response::kAck:
    case wire::Response::BODY_NOT_SET:
      out.body = transport::Ack{};
      break;
    case wire::Response::kWrite:
      out.body = transport::WriteResponse{.version = response.write().version()};
      break;
    case wire::Response::kGet:
      out.body = transport::GetResponse{.document = FromWire(response.get().document())};
      break;
    case wire::Response::kScan: {
      transport::ScanResponse scan;
      for (const auto& d : response.scan().documents()) scan.documents.push_back(FromWire(d));
      scan.next_cursor = response.scan().next_cursor();
      out.body = std::move(scan);
      break;
    }
    case wire::Response::kGetMap: {
      SHOAL_ASSIGN_OR_RETURN(transport::ClusterState state, FromWire(response.get_map().state()));
      out.body = transport::GetMapResponse{.state = std::move(state)};
      break;
    }
    case wire::Response::kHeartbeat:
      out.body = transport::HeartbeatResponse{
          .epoch = MapEpoch(response.heartbeat().epoch()),
          .released = QuiescedFromWire(response.heartbeat().released())};
      break;
    case wire::Response::kCreateCollection: {
      const auto& spec = response.create_collection().collection();
      out.body = transport::CreateCollectionResponse{
          .collection =
              storage::CollectionSpec{.id = CollectionId(spec.id()), .name = spec.name()}};
      break;
    }
    case wire::Response::kExportBucket: {
      SHOAL_ASSIGN_OR_RETURN(storage::ExportedRange exported,
                             FromWire(response.export_bucket().exported()));
      out.body = transport::ExportBucketResponse{.exported = std::move(exported)};
      break;
    }
    case wire::Response::kCatchUp:
      out.body =
          transport::CatchUpResponse{.applied_sequence = response.catch_up().applied_sequence(),
                                     .applied = response.catch_up().applied(),
                                     .applied_bytes = response.catch_up().applied_bytes(),
                                     .read_micros = response.catch_up().read_micros(),
                                     .apply_micros = response.catch_up().apply_micros()};
      break;
    case wire::Response::kResumeCopy: {
      const auto& w = response.resume_copy();
      out.body = transport::ResumeCopyResponse{
          .sequence = w.resumed() ? std::optional<uint64_t>(w.sequence()) : std::nullopt,
          .refused = w.refused(),
          .position = {Term(w.term()), w.rseq()}};
      break;
    }
    case wire::Response::kReadChanges: {
      transport::ReadChangesResponse changes;
      for (const auto& d : response.read_changes().changes()) {
        changes.changes.push_back(FromWire(d));
      }
      changes.next_sequence = response.read_changes().next_sequence();
      out.body = std::move(changes);
      break;
    }
    case wire::Response::kFence: {
      transport::FenceResponse fence{.sequence = response.fence().sequence(), .replica = {}};
      if (response.fence().has_replica()) {
        SHOAL_ASSIGN_OR_RETURN(fence.replica, FromWire(response.fence().replica()));
      }
      out.body = std::move(fence);
      break;
    }
    case wire::Response::kReplicate: {
      transport::ReplicateResponse replicate;
      for (const auto& a : response.replicate().acks()) {
        replicate.acks.push_back(transport::ReplicaAck{.bucket = BucketId(a.bucket()),
                                                       .status = FromWire(a.status()),
                                                       .position = {Term(a.term()), a.rseq()}});
      }
      out.body = std::move(replicate);
      break;
    }
    case wire::Response::kSealTerm: {
      transport::SealTermResponse seal{.store_id = response.seal_term().store_id(), .buckets = {}};
      for (const auto& b : response.seal_term().buckets()) {
        seal.buckets.push_back(transport::SealedBucket{.bucket = BucketId(b.bucket()),
                                                       .position = {Term(b.term()), b.rseq()},
                                                       .micros_since_ack = b.micros_since_ack()});
      }
      out.body = std::move(seal);
      break;
    }
    case wire::Response::kBucketLoad: {
      transport::BucketLoadResponse load;
      for (const auto& b : response.bucket_load().buckets()) {
        load.buckets.push_back(transport::BucketLoad{.bucket = BucketId(b.bucket()),
                                                     .bytes = b.bytes(),
                                                     .documents = b.documents(),
                                                     .reads_per_second = b.reads_per_second(),
                                                     .writes_per_second = b.writes_per_second()});
      }
      for (const auto& h : response.bucket_load().hot_keys()) {
        load.hot_keys.push_back(transport::HotKeyStat{.collection = CollectionId(h.collection()),
                                                      .primary_key = h.primary_key(),
                                                      .writes_per_second = h.writes_per_second(),
                                                      .error_per_second = h.error_per_second()});
      }
      if (response.bucket_load().has_disk()) {
        load.disk = transport::DiskSpaceReport{
            .free_bytes = response.bucket_load().disk().free_bytes(),
            .reserve_bytes = response.bucket_load().disk().reserve_bytes()};
      }
      for (const auto& h : response.bucket_load().held()) {
        SHOAL_ASSIGN_OR_RETURN(storage::PointRange range, FromWire(h.range()));
        load.held.push_back(transport::HeldCopy{.bucket = BucketId(h.bucket()),
                                                .range = range,
                                                .position = {Term(h.term()), h.rseq()}});
      }
      out.body = std::move(load);
      break;
    }
    case wire::Response::kTransferBucket:
      out.body =
          transport::TransferBucketResponse{.next_cursor = response.transfer_bucket().next_cursor(),
                                            .documents = response.transfer_bucket().documents(),
                                            .bytes = response.transfer_bucket().bytes()};
      break;
    case wire::Response::kBatchWrite: {
      transport::BatchWriteResponse batch;
      batch.results.reserve(static_cast<size_t>(response.batch_write().results_size()));
      for (const auto& result : response.batch_write().results()) {
        batch.results.push_back(transport::BatchWriteResult{.status = FromWire(result.status()),
                                                            .version = result.version()});
      }
      out.body = std::move(batch);
      break;
    }
    case wire::Response::kBatchGet: {
      transport::BatchGetResponse batch;
      batch.results.reserve(static_cast<size_t>(response.batch_get().results_size()));
      for (const auto& result : response.batch_get().results()) {
        batch.results.push_back(transport::BatchGetResult{.status = FromWire(result.status()),
                                                          .document = FromWire(result.document())});
      }
      out.body = std::move(batch);
      break;
    }
    case wire::Response::kFetchMoveFile: {
      const auto& w = response.fetch_move_file();
      out.body = transport::FetchMoveFileResponse{.data = w.data(),
                                                  .chunk_crc32c = w.chunk_crc32c(),
                                                  .file_bytes = w.file_bytes(),
                                                  .file_crc32c = w.file_crc32c(),
                                                  .file_count = w.file_count()};
      break;
    }
  }
  return out;
}

}  // namespace shoal::net
