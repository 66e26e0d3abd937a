// The sharded-field part of include/shoal/shoal.h and include/shoal/hotspot.h (paper 003;
// docs/design/hotspot.md): Collection's Declare/Apply/Get/PutMember/…, the background
// maintenance thread of a Database, and the fold registry.

#include <fmt/format.h>

#include <chrono>

#include "include/shoal/hotspot.h"
#include "include/shoal/hotspot_json.h"
#include "include/shoal/shoal.h"
#include "src/api/database_impl.h"

namespace shoal {
namespace {

// How often the maintenance thread folds dynamic cells and considers shrinking auto fields.
constexpr auto kMaintainEvery = std::chrono::milliseconds(250);

// One JSON value from text; kInvalidArgument naming `what` if it is not one.
StatusOr<Json> ParseValue(std::string_view text, std::string_view what) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return InvalidArgumentError(fmt::format("{} is not a JSON value: {}", what, text));
  }
  return json;
}

// JSON text; invalid UTF-8 in a string is kInvalidArgument.
StatusOr<std::string> DumpValue(const Json& json) {
  try {
    return json.dump();
  } catch (const Json::exception& e) {
    return InvalidArgumentError(fmt::format("a fold value is not valid JSON: {}", e.what()));
  }
}

}  // namespace

std::shared_ptr<hotspot::HotCollection> Database::Impl::HotFor(std::string_view name,
                                                               CollectionId id) {
  std::lock_guard lock(mu);
  if (auto it = hot.find(name); it != hot.end()) return it->second;
  transport::Runtime& rt = backend->runtime();
  auto collection = std::make_shared<hotspot::HotCollection>(
      *client, std::string(name), id, [&rt] { return rt.Now(); },
      /*seed=*/static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
          (hot.size() + 1) * 0x9e3779b97f4a7c15ull);
  hot.emplace(std::string(name), collection);
  if (!maintainer.joinable()) {
    maintainer = std::thread([this] {
      std::unique_lock lock(mu);
      while (!closed) {
        maintainer_wake.wait_for(lock, kMaintainEvery, [this] { return closed; });
        if (closed) break;
        std::vector<std::shared_ptr<hotspot::HotCollection>> collections;
        for (const auto& [n, c] : hot) collections.push_back(c);
        lock.unlock();
        // Background work fails softly: the next pass (or the next Apply) tries again.
        for (const auto& c : collections) (void)c->Maintain();
        lock.lock();
      }
    });
  }
  return collection;
}

void Database::Impl::StopMaintainer() {
  maintainer_wake.notify_all();
  if (maintainer.joinable()) maintainer.join();
}

StatusOr<Document> Collection::Get(std::string_view key, const ReadOptions& options) {
  hotspot::ReadMode mode = hotspot::ReadMode::kLatest;
  switch (options.mode) {
    case ReadMode::kLatest:
    case ReadMode::kAnyReplica:
      break;
    case ReadMode::kSnapshot:
      mode = hotspot::ReadMode::kSnapshot;
      break;
  }
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  SHOAL_ASSIGN_OR_RETURN(
      storage::Document d,
      impl_->InUserWords(c.hot->Get(key, mode, options.mode == ReadMode::kAnyReplica)));
  return Document{.key = std::move(d.primary_key), .json = std::move(d.body), .version = d.version};
}

Status Collection::Declare(std::string_view schema_json) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kCreateIfMissing));
  return impl_->InUserWords(c.hot->Declare(schema_json));
}

StatusOr<std::string> Collection::Schema() {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  SHOAL_ASSIGN_OR_RETURN(hotspot::CollectionSchema schema, impl_->InUserWords(c.hot->Schema()));
  return schema.ToJson().dump();
}

StatusOr<ApplyResult> Collection::Apply(std::string_view key, std::string_view field,
                                        std::string_view operand_json,
                                        const ApplyOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  SHOAL_ASSIGN_OR_RETURN(hotspot::ApplyOutcome outcome,
                         impl_->InUserWords(c.hot->Apply(
                             key, field, operand_json,
                             hotspot::ApplyOptions{.retry_on_conflict = options.retry_on_conflict,
                                                   .max_attempts = 256,
                                                   .combine = options.combine})));
  return ApplyResult{.conflicts = outcome.conflicts, .members = outcome.members};
}

Status Collection::PutMember(std::string_view key, std::string_view field, std::string_view member,
                             std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  return impl_->InUserWords(c.hot->PutMember(key, field, member, json));
}

Status Collection::RemoveMember(std::string_view key, std::string_view field,
                                std::string_view member) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  return impl_->InUserWords(c.hot->RemoveMember(key, field, member));
}

StatusOr<ShardingInfo> Collection::Sharding(std::string_view key, std::string_view field) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  SHOAL_ASSIGN_OR_RETURN(auto described, impl_->InUserWords(c.hot->Describe(key, field)));
  const auto& [kind, layout] = described;
  return ShardingInfo{.kind = std::string(hotspot::ToString(kind)),
                      .active_cells = layout.active_cells,
                      .retiring_cells = layout.retiring_cells,
                      .pending_cells = layout.pending_cells,
                      .distinct_buckets = layout.distinct_buckets,
                      .distinct_nodes = layout.distinct_nodes};
}

Status Collection::Reshard(std::string_view key, std::string_view field, uint32_t shards) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  return impl_->InUserWords(c.hot->Reshard(key, field, shards));
}

Status Collection::Compact(std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(auto c, impl_->Resolve(CollectionUse::kMustExist));
  return impl_->InUserWords(c.hot->Compact(key));
}

Status RegisterFold(std::string_view name, const Json& neutral, FoldFunction combine,
                    const std::vector<Json>& samples) {
  if (!combine) return InvalidArgumentError("a fold needs a combine function");
  auto fold = std::make_shared<hotspot::Fold>(std::string(name), neutral, std::move(combine));
  return hotspot::FoldRegistry::Global().Register(std::move(fold), samples);
}

StatusOr<Json> FoldValues(std::string_view fold, const Json& a, const Json& b) {
  SHOAL_ASSIGN_OR_RETURN(hotspot::FoldPtr f, hotspot::FoldRegistry::Global().Find(fold));
  return f->Combine(a, b);
}

StatusOr<Json> LiftOperand(std::string_view fold, const Json& operand) {
  SHOAL_ASSIGN_OR_RETURN(hotspot::FoldPtr f, hotspot::FoldRegistry::Global().Find(fold));
  return f->Lift(operand);
}

StatusOr<Json> NeutralOf(std::string_view fold) {
  SHOAL_ASSIGN_OR_RETURN(hotspot::FoldPtr f, hotspot::FoldRegistry::Global().Find(fold));
  return f->neutral();
}

Status RegisterFoldText(std::string_view name, std::string_view neutral, FoldTextFunction combine,
                        const std::vector<std::string>& samples) {
  if (!combine) return InvalidArgumentError("a fold needs a combine function");
  SHOAL_ASSIGN_OR_RETURN(Json neutral_json, ParseValue(neutral, "the neutral element"));
  std::vector<Json> sample_jsons;
  sample_jsons.reserve(samples.size());
  for (const std::string& sample : samples) {
    SHOAL_ASSIGN_OR_RETURN(Json json, ParseValue(sample, "a sample"));
    sample_jsons.push_back(std::move(json));
  }
  return RegisterFold(
      name, neutral_json,
      [combine = std::move(combine)](const Json& a, const Json& b) -> StatusOr<Json> {
        SHOAL_ASSIGN_OR_RETURN(std::string a_text, DumpValue(a));
        SHOAL_ASSIGN_OR_RETURN(std::string b_text, DumpValue(b));
        SHOAL_ASSIGN_OR_RETURN(std::string folded, combine(a_text, b_text));
        return ParseValue(folded, "the fold's result");
      },
      sample_jsons);
}

StatusOr<std::string> FoldValuesText(std::string_view fold, std::string_view a,
                                     std::string_view b) {
  SHOAL_ASSIGN_OR_RETURN(Json a_json, ParseValue(a, "a fold operand"));
  SHOAL_ASSIGN_OR_RETURN(Json b_json, ParseValue(b, "a fold operand"));
  SHOAL_ASSIGN_OR_RETURN(Json folded, FoldValues(fold, a_json, b_json));
  return DumpValue(folded);
}

StatusOr<std::string> LiftOperandText(std::string_view fold, std::string_view operand) {
  SHOAL_ASSIGN_OR_RETURN(Json operand_json, ParseValue(operand, "the operand"));
  SHOAL_ASSIGN_OR_RETURN(Json lifted, LiftOperand(fold, operand_json));
  return DumpValue(lifted);
}

StatusOr<std::string> NeutralOfText(std::string_view fold) {
  SHOAL_ASSIGN_OR_RETURN(Json neutral, NeutralOf(fold));
  return DumpValue(neutral);
}

}  // namespace shoal
