// Requests of src/transport/messages.h <-> proto/shoal.proto (responses: wire_responses.cc).

#include <fmt/format.h>

#include <vector>

#include "src/common/overloaded.h"
#include "src/net/wire_codec.h"

namespace shoal::net {
namespace {

void BucketTermsToWire(const std::vector<transport::BucketTerm>& terms,
                       google::protobuf::RepeatedPtrField<wire::BucketTerm>* out) {
  for (const transport::BucketTerm& t : terms) {
    wire::BucketTerm* w = out->Add();
    w->set_bucket(t.bucket.value());
    w->set_term(t.term.value());
    w->set_committed(t.committed);
  }
}

std::vector<transport::BucketTerm> BucketTermsFromWire(
    const google::protobuf::RepeatedPtrField<wire::BucketTerm>& terms) {
  std::vector<transport::BucketTerm> out;
  out.reserve(static_cast<size_t>(terms.size()));
  for (const wire::BucketTerm& t : terms) {
    out.push_back(
        {.bucket = BucketId(t.bucket()), .term = Term(t.term()), .committed = t.committed()});
  }
  return out;
}

std::vector<BucketId> BucketIdsFromWire(const google::protobuf::RepeatedField<uint32_t>& ids) {
  std::vector<BucketId> out;
  out.reserve(static_cast<size_t>(ids.size()));
  for (uint32_t id : ids) out.emplace_back(id);
  return out;
}

std::optional<MoveId> MoveOf(bool has, const wire::MoveRef& ref) {
  return has ? std::optional<MoveId>(MoveId(ref.id())) : std::nullopt;
}

void WriteToWire(const transport::WriteRequest& r, wire::WriteRequest* w) {
  w->set_epoch(r.epoch.value());
  w->set_op(static_cast<wire::WriteRequest::Op>(r.op));
  w->set_collection(r.collection.value());
  w->set_primary_key(r.primary_key);
  w->set_body(r.body);
  w->set_expected_version(r.expected_version);
  if (r.via_move.has_value()) w->mutable_via_move()->set_id(r.via_move->value());
}

void GetToWire(const transport::GetRequest& r, wire::GetRequest* w) {
  w->set_epoch(r.epoch.value());
  w->set_collection(r.collection.value());
  w->set_primary_key(r.primary_key);
  if (r.via_move.has_value()) w->mutable_via_move()->set_id(r.via_move->value());
  w->set_include_tombstones(r.include_tombstones);
  w->set_any_replica(r.any_replica);
}

transport::GetRequest GetFromWire(const wire::GetRequest& w) {
  return transport::GetRequest{.epoch = MapEpoch(w.epoch()),
                               .collection = CollectionId(w.collection()),
                               .primary_key = w.primary_key(),
                               .via_move = MoveOf(w.has_via_move(), w.via_move()),
                               .include_tombstones = w.include_tombstones(),
                               .any_replica = w.any_replica()};
}

StatusOr<transport::WriteOp> WriteOpOf(wire::WriteRequest::Op op) {
  switch (op) {
    case wire::WriteRequest::INSERT:
      return transport::WriteOp::kInsert;
    case wire::WriteRequest::UPDATE:
      return transport::WriteOp::kUpdate;
    case wire::WriteRequest::UPSERT:
      return transport::WriteOp::kUpsert;
    case wire::WriteRequest::DELETE:
      return transport::WriteOp::kDelete;
    case wire::WriteRequest::COMPARE_AND_SET:
      return transport::WriteOp::kCompareAndSet;
    default:
      return InvalidArgumentError(fmt::format("unknown write op {}", static_cast<int>(op)));
  }
}

wire::DropBucketRequest::Reason DropReasonToWire(transport::DropReason reason) {
  switch (reason) {
    case transport::DropReason::kLeavingCopy:
      return wire::DropBucketRequest::LEAVING_COPY;
    case transport::DropReason::kAbortedStaging:
      return wire::DropBucketRequest::ABORTED_STAGING;
  }
  return wire::DropBucketRequest::LEAVING_COPY;
}

// An unknown reason is refused rather than read as a full drop: a drop deletes data.
StatusOr<transport::DropReason> DropReasonOf(wire::DropBucketRequest::Reason reason) {
  switch (reason) {
    case wire::DropBucketRequest::LEAVING_COPY:
      return transport::DropReason::kLeavingCopy;
    case wire::DropBucketRequest::ABORTED_STAGING:
      return transport::DropReason::kAbortedStaging;
    default:
      return InvalidArgumentError(fmt::format("unknown drop reason {}", static_cast<int>(reason)));
  }
}

StatusOr<transport::WriteRequest> WriteFromWire(const wire::WriteRequest& w) {
  SHOAL_ASSIGN_OR_RETURN(transport::WriteOp op, WriteOpOf(w.op()));
  return transport::WriteRequest{.epoch = MapEpoch(w.epoch()),
                                 .op = op,
                                 .collection = CollectionId(w.collection()),
                                 .primary_key = w.primary_key(),
                                 .body = w.body(),
                                 .expected_version = w.expected_version(),
                                 .via_move = MoveOf(w.has_via_move(), w.via_move())};
}

}  // namespace

void ToWire(const transport::Request& request, wire::Request* out) {
  std::visit(Overloaded{
                 [out](const transport::WriteRequest& r) { WriteToWire(r, out->mutable_write()); },
                 [out](const transport::BatchWriteRequest& r) {
                   auto* w = out->mutable_batch_write();
                   w->set_epoch(r.epoch.value());
                   w->mutable_writes()->Reserve(static_cast<int>(r.writes.size()));
                   for (const auto& write : r.writes) WriteToWire(write, w->add_writes());
                 },
                 [out](const transport::GetRequest& r) { GetToWire(r, out->mutable_get()); },
                 [out](const transport::BatchGetRequest& r) {
                   auto* w = out->mutable_batch_get();
                   w->set_epoch(r.epoch.value());
                   w->mutable_gets()->Reserve(static_cast<int>(r.gets.size()));
                   for (const auto& get : r.gets) GetToWire(get, w->add_gets());
                 },
                 [out](const transport::ScanRequest& r) {
                   auto* w = out->mutable_scan();
                   w->set_epoch(r.epoch.value());
                   w->set_bucket(r.bucket.value());
                   ToWire(r.range, w->mutable_range());
                   w->set_has_collection(r.collection.has_value());
                   if (r.collection.has_value()) w->set_collection(r.collection->value());
                   ToWire(r.filter, w->mutable_filter());
                   w->set_cursor(r.cursor);
                   w->set_max_documents(r.max_documents);
                   if (r.via_move.has_value()) w->mutable_via_move()->set_id(r.via_move->value());
                   w->set_include_tombstones(r.include_tombstones);
                   w->set_max_bytes(r.max_bytes);
                 },
                 [out](const transport::GetMapRequest&) { out->mutable_get_map(); },
                 [out](const transport::InstallMapRequest& r) {
                   ToWire(r.state, out->mutable_install_map()->mutable_state());
                 },
                 [out](const transport::HeartbeatRequest& r) {
                   auto* w = out->mutable_heartbeat();
                   w->set_node(r.node.value());
                   w->set_epoch(r.epoch.value());
                   w->set_store_id(r.store_id);
                   w->set_incarnation(r.incarnation);
                   BucketTermsToWire(r.fenced, w->mutable_fenced());
                   QuiescedToWire(r.quiesced, w->mutable_quiesced());
                   w->set_cluster_id(r.cluster_id);
                 },
                 [out](const transport::CreateCollectionRequest& r) {
                   out->mutable_create_collection()->set_name(r.name);
                 },
                 [out](const transport::ExportBucketRequest& r) {
                   auto* w = out->mutable_export_bucket();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                 },
                 [out](const transport::IngestBucketRequest& r) {
                   auto* w = out->mutable_ingest_bucket();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   ToWire(r.exported, w->mutable_exported());
                 },
                 [out](const transport::CatchUpRequest& r) {
                   auto* w = out->mutable_catch_up();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   w->set_source(r.source.value());
                   w->set_after_sequence(r.after_sequence);
                   w->set_has_until_sequence(r.until_sequence.has_value());
                   if (r.until_sequence.has_value()) w->set_until_sequence(*r.until_sequence);
                   w->set_stop_below(r.stop_below);
                   if (r.replica.has_value()) ToWire(*r.replica, w->mutable_replica());
                 },
                 [out](const transport::ReadChangesRequest& r) {
                   auto* w = out->mutable_read_changes();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   w->set_after_sequence(r.after_sequence);
                   w->set_max_changes(r.max_changes);
                 },
                 [out](const transport::ReplicateRequest& r) {
                   auto* w = out->mutable_replicate();
                   w->set_primary(r.primary.value());
                   w->set_epoch(r.epoch.value());
                   for (const storage::ReplicatedEntry& e : r.entries) {
                     auto* entry = w->add_entries();
                     entry->set_bucket(e.bucket.value());
                     entry->set_term(e.position.term.value());
                     entry->set_rseq(e.position.rseq);
                     for (const auto& d : e.documents) ToWire(d, entry->add_documents());
                   }
                   BucketTermsToWire(r.terms, w->mutable_terms());
                 },
                 [out](const transport::ReplicaReportRequest& r) {
                   auto* w = out->mutable_replica_report();
                   w->set_primary(r.primary.value());
                   w->set_bucket(r.bucket.value());
                   w->set_term(r.term.value());
                   w->set_backup(r.backup.value());
                   w->set_reason(r.reason);
                   w->set_broken(r.broken);
                 },
                 [out](const transport::SealTermRequest& r) {
                   auto* w = out->mutable_seal_term();
                   BucketTermsToWire(r.buckets, w->mutable_buckets());
                 },
                 [out](const transport::QuiesceRequest& r) {
                   auto* w = out->mutable_quiesce();
                   w->set_epoch(r.epoch.value());
                   for (BucketId b : r.buckets) w->add_buckets(b.value());
                   w->set_token(r.token);
                   w->set_release(r.release);
                 },
                 [out](const transport::ResumeCopyRequest& r) {
                   auto* w = out->mutable_resume_copy();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   w->set_source(r.source.value());
                   w->set_store_id(r.store_id);
                 },
                 [out](const transport::RetainedLogRequest& r) {
                   auto* w = out->mutable_retained_log();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   ToWire(r.copy, w->mutable_copy());
                 },
                 [out](const transport::FenceRequest& r) {
                   auto* w = out->mutable_fence();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                 },
                 [out](const transport::DropBucketRequest& r) {
                   auto* w = out->mutable_drop_bucket();
                   w->set_epoch(r.epoch.value());
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   ToWire(r.range, w->mutable_range());
                   w->set_reason(DropReasonToWire(r.reason));
                 },
                 [out](const transport::BucketLoadRequest&) { out->mutable_bucket_load(); },
                 [out](const transport::TransferBucketRequest& r) {
                   auto* w = out->mutable_transfer_bucket();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   w->set_source(r.source.value());
                   w->set_cursor(r.cursor);
                   w->set_max_pages(r.max_pages);
                 },
                 [out](const transport::FetchMoveFileRequest& r) {
                   auto* w = out->mutable_fetch_move_file();
                   w->set_move(r.move.value());
                   w->set_bucket(r.bucket.value());
                   w->set_sequence(r.sequence);
                   w->set_file_index(r.file_index);
                   w->set_offset(r.offset);
                   w->set_max_bytes(r.max_bytes);
                 },
             },
             request);
}

StatusOr<transport::Request> FromWire(const wire::Request& request) {
  switch (request.body_case()) {
    case wire::Request::kWrite: {
      SHOAL_ASSIGN_OR_RETURN(transport::WriteRequest write, WriteFromWire(request.write()));
      return transport::Request(std::move(write));
    }
    case wire::Request::kBatchWrite: {
      const auto& w = request.batch_write();
      transport::BatchWriteRequest batch{.epoch = MapEpoch(w.epoch()), .writes = {}};
      batch.writes.reserve(static_cast<size_t>(w.writes_size()));
      for (const auto& write : w.writes()) {
        SHOAL_ASSIGN_OR_RETURN(transport::WriteRequest one, WriteFromWire(write));
        batch.writes.push_back(std::move(one));
      }
      return transport::Request(std::move(batch));
    }
    case wire::Request::kGet:
      return transport::Request(GetFromWire(request.get()));
    case wire::Request::kBatchGet: {
      const auto& w = request.batch_get();
      transport::BatchGetRequest batch{.epoch = MapEpoch(w.epoch()), .gets = {}};
      batch.gets.reserve(static_cast<size_t>(w.gets_size()));
      for (const auto& get : w.gets()) batch.gets.push_back(GetFromWire(get));
      return transport::Request(std::move(batch));
    }
    case wire::Request::kScan: {
      const auto& w = request.scan();
      SHOAL_ASSIGN_OR_RETURN(storage::PointRange range, FromWire(w.range()));
      SHOAL_ASSIGN_OR_RETURN(storage::DocumentFilter filter, FromWire(w.filter()));
      return transport::Request(transport::ScanRequest{
          .epoch = MapEpoch(w.epoch()),
          .bucket = BucketId(w.bucket()),
          .range = range,
          .collection =
              w.has_collection() ? std::optional<CollectionId>(w.collection()) : std::nullopt,
          .filter = std::move(filter),
          .cursor = w.cursor(),
          .max_documents = w.max_documents(),
          .via_move = MoveOf(w.has_via_move(), w.via_move()),
          .include_tombstones = w.include_tombstones(),
          .max_bytes = w.max_bytes()});
    }
    case wire::Request::kGetMap:
      return transport::Request(transport::GetMapRequest{});
    case wire::Request::kInstallMap: {
      SHOAL_ASSIGN_OR_RETURN(transport::ClusterState state,
                             FromWire(request.install_map().state()));
      return transport::Request(transport::InstallMapRequest{.state = std::move(state)});
    }
    case wire::Request::kHeartbeat: {
      const auto& w = request.heartbeat();
      return transport::Request(
          transport::HeartbeatRequest{.node = NodeId(w.node()),
                                      .epoch = MapEpoch(w.epoch()),
                                      .store_id = w.store_id(),
                                      .incarnation = w.incarnation(),
                                      .fenced = BucketTermsFromWire(w.fenced()),
                                      .quiesced = QuiescedFromWire(w.quiesced()),
                                      .cluster_id = w.cluster_id()});
    }
    case wire::Request::kQuiesce:
      return transport::Request(
          transport::QuiesceRequest{.epoch = MapEpoch(request.quiesce().epoch()),
                                    .buckets = BucketIdsFromWire(request.quiesce().buckets()),
                                    .token = request.quiesce().token(),
                                    .release = request.quiesce().release()});
    case wire::Request::kCreateCollection:
      return transport::Request(
          transport::CreateCollectionRequest{.name = request.create_collection().name()});
    case wire::Request::kExportBucket:
      return transport::Request(
          transport::ExportBucketRequest{.move = MoveId(request.export_bucket().move()),
                                         .bucket = BucketId(request.export_bucket().bucket())});
    case wire::Request::kIngestBucket: {
      const auto& w = request.ingest_bucket();
      SHOAL_ASSIGN_OR_RETURN(storage::ExportedRange exported, FromWire(w.exported()));
      return transport::Request(transport::IngestBucketRequest{.move = MoveId(w.move()),
                                                               .bucket = BucketId(w.bucket()),
                                                               .exported = std::move(exported)});
    }
    case wire::Request::kCatchUp: {
      const auto& w = request.catch_up();
      std::optional<storage::ReplicaState> replica;
      if (w.has_replica()) {
        SHOAL_ASSIGN_OR_RETURN(replica, FromWire(w.replica()));
      }
      return transport::Request(transport::CatchUpRequest{
          .move = MoveId(w.move()),
          .bucket = BucketId(w.bucket()),
          .source = NodeId(w.source()),
          .after_sequence = w.after_sequence(),
          .until_sequence =
              w.has_until_sequence() ? std::optional<uint64_t>(w.until_sequence()) : std::nullopt,
          .stop_below = w.stop_below(),
          .replica = std::move(replica)});
    }
    case wire::Request::kReadChanges: {
      const auto& w = request.read_changes();
      return transport::Request(transport::ReadChangesRequest{.move = MoveId(w.move()),
                                                              .bucket = BucketId(w.bucket()),
                                                              .after_sequence = w.after_sequence(),
                                                              .max_changes = w.max_changes()});
    }
    case wire::Request::kReplicate: {
      const auto& w = request.replicate();
      transport::ReplicateRequest replicate{
          .primary = NodeId(w.primary()), .epoch = MapEpoch(w.epoch()), .entries = {}, .terms = {}};
      replicate.entries.reserve(static_cast<size_t>(w.entries_size()));
      for (const auto& e : w.entries()) {
        storage::ReplicatedEntry entry{.bucket = BucketId(e.bucket()),
                                       .position = {Term(e.term()), e.rseq()},
                                       .documents = {}};
        for (const auto& d : e.documents()) entry.documents.push_back(FromWire(d));
        replicate.entries.push_back(std::move(entry));
      }
      replicate.terms = BucketTermsFromWire(w.terms());
      return transport::Request(std::move(replicate));
    }
    case wire::Request::kReplicaReport: {
      const auto& w = request.replica_report();
      return transport::Request(transport::ReplicaReportRequest{.primary = NodeId(w.primary()),
                                                                .bucket = BucketId(w.bucket()),
                                                                .term = Term(w.term()),
                                                                .backup = NodeId(w.backup()),
                                                                .reason = w.reason(),
                                                                .broken = w.broken()});
    }
    case wire::Request::kSealTerm:
      return transport::Request(transport::SealTermRequest{
          .buckets = BucketTermsFromWire(request.seal_term().buckets())});
    case wire::Request::kResumeCopy: {
      const auto& w = request.resume_copy();
      return transport::Request(transport::ResumeCopyRequest{.move = MoveId(w.move()),
                                                             .bucket = BucketId(w.bucket()),
                                                             .source = NodeId(w.source()),
                                                             .store_id = w.store_id()});
    }
    case wire::Request::kRetainedLog: {
      const auto& w = request.retained_log();
      SHOAL_ASSIGN_OR_RETURN(storage::ReplicaState copy, FromWire(w.copy()));
      return transport::Request(transport::RetainedLogRequest{
          .move = MoveId(w.move()), .bucket = BucketId(w.bucket()), .copy = std::move(copy)});
    }
    case wire::Request::kFence:
      return transport::Request(transport::FenceRequest{
          .move = MoveId(request.fence().move()), .bucket = BucketId(request.fence().bucket())});
    case wire::Request::kDropBucket: {
      const auto& w = request.drop_bucket();
      SHOAL_ASSIGN_OR_RETURN(storage::PointRange range, FromWire(w.range()));
      SHOAL_ASSIGN_OR_RETURN(transport::DropReason reason, DropReasonOf(w.reason()));
      return transport::Request(transport::DropBucketRequest{.epoch = MapEpoch(w.epoch()),
                                                             .move = MoveId(w.move()),
                                                             .bucket = BucketId(w.bucket()),
                                                             .range = range,
                                                             .reason = reason});
    }
    case wire::Request::kBucketLoad:
      return transport::Request(transport::BucketLoadRequest{});
    case wire::Request::kTransferBucket: {
      const auto& w = request.transfer_bucket();
      return transport::Request(transport::TransferBucketRequest{.move = MoveId(w.move()),
                                                                 .bucket = BucketId(w.bucket()),
                                                                 .source = NodeId(w.source()),
                                                                 .cursor = w.cursor(),
                                                                 .max_pages = w.max_pages()});
    }
    case wire::Request::kFetchMoveFile: {
      const auto& w = request.fetch_move_file();
      return transport::Request(transport::FetchMoveFileRequest{.move = MoveId(w.move()),
                                                                .bucket = BucketId(w.bucket()),
                                                                .sequence = w.sequence(),
                                                                .file_index = w.file_index(),
                                                                .offset = w.offset(),
                                                                .max_bytes = w.max_bytes()});
    }
    case wire::Request::BODY_NOT_SET:
      break;
  }
  return InvalidArgumentError("request without a body");
}

}  // namespace shoal::net
