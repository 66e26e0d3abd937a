#pragma once

// EntityMapper: a typed object mapper for documents with sharded fields, after the AutoShard
// object mapper of paper 003 (§3 the annotations, §4 loading, updating and saving).
//
//   struct Question {
//     std::string id;
//     std::string text;
//     int64_t votes = 0;
//     std::vector<std::string> tags;
//   };
//   auto mapper = shoal::EntityMapper<Question>("questions")                 // @Entity
//                     .Id(&Question::id)                                     // @Id
//                     .Field("text", &Question::text)
//                     .Sharded("votes", &Question::votes,                    // @Shardable
//                              {.fold = "sum", .neutral = 0, .shards = 10, .automatic = false})
//                     .Sharded("tags", &Question::tags,
//                              {.fold = "set_union", .neutral = {}, .shards = 0, .automatic =
//                              false});
//   auto questions = mapper.Open(*db);                 // the collection, with the fields declared
//   auto e = mapper.Create(*questions, {.id = "42", .text = "Why?", .votes = 0, .tags = {}});
//   auto e = mapper.Load(*questions, "42");            // main document + folded sharded values
//   e->Apply(&Question::votes, 1);                     // @ShardMethod: visible value and delta
//   mapper.Save(*questions, *e);                       // main document, then one shard per field
//
// The paper's @ShardFold is the fold named in Sharded(...): a built-in (sum, min, max, count,
// bit_or, set_union) or one registered with shoal::RegisterFold before the mapper is built.
//
// Mapping. The main document holds the Field(...) members, one JSON member each, under the
// field's name; the Id member is the primary key (std::string or an integer type) and is not in
// the body. Sharded members are never written into the body (the store refuses writes that set
// a declared sharded field); Load reads their folded values from Get and Save sends their
// pending deltas with Collection::Apply. Member types: integers, double, bool, std::string,
// std::vector<std::string> and anything with nlohmann to_json/from_json. A member whose
// neutral element is null (min and max without a declared neutral) needs a type that holds null,
// or a declared neutral.
//
// Updating (paper Figure 4). Entity::Apply(member, operand) folds the lifted operand both into
// the visible member (the application sees the new value at once) and into a pending delta that
// starts at the neutral element. Sharded members must change only through Apply: a direct
// assignment is not saved.
//
// Saving (paper Figure 5). Save upserts the main document when its non-sharded fields differ from
// what was last loaded or saved, then folds each non-neutral pending delta into one shard (an
// atomic Collection::Apply on a random shard, retried on conflict) and resets it to neutral. A
// delta that the fold would not take back as one operand ("count": any operand counts 1) is sent
// as the operands it was made of. Save is not atomic across fields: on an error the deltas not
// sent stay pending and a later Save sends them; after kUnknown (outcome unknown) the delta stays
// pending too, so a repeated Save may apply it twice: reload the entity instead.
//
// Errors are shoal::Status; no exception escapes (JSON conversion errors are kInvalidArgument).
// A mistake while building the mapper (a duplicate field, an unknown fold, a missing Id) is kept
// and returned by every later call.

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "include/shoal/hotspot_json.h"
#include "include/shoal/shoal.h"

namespace shoal {

// The declaration of one sharded member (the paper's @Shardable).
struct ShardedOptions {
  std::string fold;               // the @ShardFold: a built-in or registered fold's name
  std::optional<Json> neutral{};  // nothing: the fold's own neutral element
  uint32_t shards = 0;            // static property sharding over this many shards; 0: dynamic
  bool automatic = false;         // true: the shard count follows contention (shards must be 0)
};

namespace mapper_internal {

// The message of an exception caught at the mapper's boundary.
[[nodiscard]] inline Status ConversionError(std::string_view what, std::string_view field,
                                            const std::exception& e) {
  std::string message(what);
  message += " of field '";
  message += field;
  message += "': ";
  message += e.what();
  return InvalidArgumentError(message);
}

// JSON text; invalid UTF-8 in a string is kInvalidArgument.
[[nodiscard]] inline StatusOr<std::string> Dump(const Json& json) {
  try {
    return json.dump();
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("not valid JSON: ") + e.what());
  }
}

template <typename M>
[[nodiscard]] Status ToJson(const M& member, std::string_view field, Json* out) {
  try {
    *out = Json(member);
    return OkStatus();
  } catch (const std::exception& e) {
    return ConversionError("encoding", field, e);
  }
}

template <typename M>
[[nodiscard]] Status FromJson(const Json& json, std::string_view field, M* out) {
  try {
    *out = json.get<M>();
    return OkStatus();
  } catch (const std::exception& e) {
    return ConversionError("decoding", field, e);
  }
}

// The types an Id member may have.
template <typename I>
concept IdMember = std::same_as<I, std::string> || std::integral<I>;

// One mapped member of T: a non-sharded field or a sharded one.
template <typename T>
struct Binding {
  std::string field;
  bool sharded = false;
  ShardedOptions options;  // sharded only
  Json neutral;            // sharded only: the declared neutral, else the fold's
  std::function<Status(const T&, Json*)> get;
  std::function<Status(const Json&, T*)> set;
  // Whether the pointed-to member pointer (of the given type) is this binding's member.
  std::function<bool(const std::type_info&, const void*)> is_member;
};

// Whether one update with `value` as its operand adds exactly `value` to a shard: true for
// every fold that lifts a value to itself (sum, min, max, bit_or, set_union, registered folds),
// false for "count" (any operand counts 1).
template <typename T>
[[nodiscard]] StatusOr<bool> IsOneOperand(const Binding<T>& binding, const Json& value) {
  SHOAL_ASSIGN_OR_RETURN(const Json lifted, LiftOperand(binding.options.fold, value));
  SHOAL_ASSIGN_OR_RETURN(const Json folded,
                         FoldValues(binding.options.fold, binding.neutral, value));
  return lifted == folded;
}

// Everything a mapper knows about T; immutable once an entity refers to it.
template <typename T>
struct Model {
  std::string collection;
  std::function<std::string(const T&)> get_id;
  std::function<Status(std::string_view, T*)> set_id;
  std::vector<Binding<T>> bindings;
  Status error;  // the first mistake made while building
};

// A sharded member's updates since the last load or save.
struct Pending {
  Json delta;                  // the fold of the lifted operands, from neutral
  std::vector<Json> operands;  // the operands themselves, in order
};

}  // namespace mapper_internal

template <std::default_initializable T>
class EntityMapper;

// Entity: one loaded or created object of type T and the pending deltas of its sharded members.
// Contract: value() is what the application sees (sharded members include the pending deltas);
// change non-sharded members through mutable_value() and sharded ones through Apply only.
// Thread-safety: thread-compatible (a value type; use one entity from one thread at a time).
template <typename T>
class Entity {
 public:
  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] const T& value() const { return value_; }
  [[nodiscard]] T& mutable_value() { return value_; }
  const T* operator->() const { return &value_; }
  T* operator->() { return &value_; }
  const T& operator*() const { return value_; }

  // The paper's @ShardMethod: folds `operand` (anything convertible to JSON) into the sharded
  // `member` and into its pending delta. kInvalidArgument when `member` is not a sharded member
  // or the operand does not fit the fold; the entity is unchanged then.
  template <typename M, typename Operand>
  [[nodiscard]] Status Apply(M T::*member, const Operand& operand) {
    const mapper_internal::Binding<T>* binding = nullptr;
    mapper_internal::Pending* pending = nullptr;
    for (size_t i = 0; i < model_->bindings.size(); ++i) {
      if (model_->bindings[i].is_member(typeid(member), &member)) {
        binding = &model_->bindings[i];
        pending = &pending_[i];
      }
    }
    if (binding == nullptr || !binding->sharded) {
      return InvalidArgumentError("Apply takes a sharded member; assign other members directly");
    }
    Json json_operand;
    SHOAL_RETURN_IF_ERROR(mapper_internal::ToJson(operand, binding->field, &json_operand));
    const std::string& fold = binding->options.fold;
    SHOAL_ASSIGN_OR_RETURN(Json lifted, LiftOperand(fold, json_operand));
    Json visible;
    SHOAL_RETURN_IF_ERROR(binding->get(value_, &visible));
    SHOAL_ASSIGN_OR_RETURN(Json new_visible, FoldValues(fold, visible, lifted));
    SHOAL_ASSIGN_OR_RETURN(Json new_delta, FoldValues(fold, pending->delta, lifted));
    SHOAL_RETURN_IF_ERROR(binding->set(new_visible, &value_));
    pending->delta = std::move(new_delta);
    pending->operands.push_back(std::move(json_operand));
    return OkStatus();
  }

  // The pending delta of a sharded member (its neutral element when nothing is pending).
  template <typename M>
  [[nodiscard]] StatusOr<Json> PendingDelta(M T::*member) const {
    for (size_t i = 0; i < model_->bindings.size(); ++i) {
      if (model_->bindings[i].sharded && model_->bindings[i].is_member(typeid(member), &member)) {
        return pending_[i].delta;
      }
    }
    return InvalidArgumentError("not a sharded member");
  }

 private:
  friend class EntityMapper<T>;
  Entity(std::shared_ptr<const mapper_internal::Model<T>> model, std::string key, T value)
      : model_(std::move(model)), key_(std::move(key)), value_(std::move(value)) {
    for (const auto& binding : model_->bindings) {
      pending_.push_back({.delta = binding.neutral, .operands = {}});
    }
  }

  std::shared_ptr<const mapper_internal::Model<T>> model_;  // shared with the mapper
  std::string key_;
  T value_;
  std::vector<mapper_internal::Pending> pending_;  // one per binding (used for sharded ones)
  std::string saved_body_;                         // the main document last loaded or saved
};

// EntityMapper: maps objects of type T to documents of one collection (the paper's @Entity).
// Contract: build it once with Id, Field and Sharded (each returns the mapper for chaining), then
// use Open/Declare, Create, Load and Save; see the file comment for the mapping and the protocol.
// Thread-safety: building is not thread-safe; a built mapper is immutable and its methods are
// thread-safe (each entity is used by one thread at a time). Copies share nothing mutable.
template <std::default_initializable T>
class EntityMapper {
 public:
  explicit EntityMapper(std::string_view collection)
      : model_(std::make_shared<mapper_internal::Model<T>>()) {
    model_->collection = std::string(collection);
  }

  // The primary key (the paper's @Id): a std::string or integer member.
  template <mapper_internal::IdMember I>
  EntityMapper& Id(I T::*member) {
    auto model = Edit();
    model->get_id = [member](const T& object) -> std::string {
      if constexpr (std::same_as<I, std::string>) {
        return object.*member;
      } else {
        return std::to_string(object.*member);
      }
    };
    model->set_id = [member](std::string_view key, T* object) -> Status {
      if constexpr (std::same_as<I, std::string>) {
        object->*member = std::string(key);
      } else {
        I id{};
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (error != std::errc() || end != key.data() + key.size()) {
          return InvalidArgumentError("the key is not an integer id: " + std::string(key));
        }
        object->*member = id;
      }
      return OkStatus();
    };
    return *this;
  }

  // A member stored in the main document under `field`.
  template <typename M>
  EntityMapper& Field(std::string field, M T::*member) {
    Bind(std::move(field), member, std::nullopt);
    return *this;
  }

  // A sharded member (the paper's @Shardable and @ShardFold).
  template <typename M>
  EntityMapper& Sharded(std::string field, M T::*member, ShardedOptions options) {
    Bind(std::move(field), member, std::move(options));
    return *this;
  }

  // The declaration of the sharded members, for Collection::Declare.
  [[nodiscard]] StatusOr<std::string> SchemaJson() const {
    SHOAL_RETURN_IF_ERROR(Ready());
    Json schema = Json::object();
    for (const auto& binding : model_->bindings) {
      if (!binding.sharded) continue;
      Json spec{{"fold", binding.options.fold}};
      if (binding.options.neutral.has_value()) spec["neutral"] = *binding.options.neutral;
      if (binding.options.automatic) {
        spec["shards"] = "auto";
      } else if (binding.options.shards > 0) {
        spec["shards"] = binding.options.shards;
      }
      schema[binding.field] = std::move(spec);
    }
    return mapper_internal::Dump(schema);
  }

  // Declares the sharded members in `collection`'s schema.
  [[nodiscard]] Status Declare(Collection& collection) const {
    SHOAL_ASSIGN_OR_RETURN(const std::string schema, SchemaJson());
    return collection.Declare(schema);
  }

  // The mapper's collection in `db`, created if missing, with the sharded members declared.
  [[nodiscard]] StatusOr<Collection> Open(Database& db) const {
    SHOAL_RETURN_IF_ERROR(Ready());
    SHOAL_ASSIGN_OR_RETURN(Collection collection, db.CreateCollection(model_->collection));
    SHOAL_RETURN_IF_ERROR(Declare(collection));
    return collection;
  }

  // Inserts `object` (kAlreadyExists if its key holds a document), then applies each sharded
  // member's value that is not neutral as one update. Not atomic: after an error the main
  // document may exist with some sharded values applied.
  [[nodiscard]] StatusOr<Entity<T>> Create(Collection& collection, const T& object) const {
    SHOAL_RETURN_IF_ERROR(Ready());
    Entity<T> entity(model_, model_->get_id(object), object);
    if (entity.key_.empty()) return InvalidArgumentError("the entity's id is empty");
    std::vector<std::pair<size_t, Json>> initial;
    for (size_t i = 0; i < model_->bindings.size(); ++i) {
      const auto& binding = model_->bindings[i];
      if (!binding.sharded) continue;
      Json value;
      SHOAL_RETURN_IF_ERROR(binding.get(object, &value));
      if (value == binding.neutral) continue;
      SHOAL_ASSIGN_OR_RETURN(const bool one, mapper_internal::IsOneOperand(binding, value));
      if (!one) {
        return InvalidArgumentError("field '" + binding.field + "': fold '" + binding.options.fold +
                                    "' cannot take the initial value as one update; create with "
                                    "the neutral value and Apply");
      }
      initial.emplace_back(i, std::move(value));
    }
    SHOAL_ASSIGN_OR_RETURN(std::string body, MainBody(object));
    SHOAL_RETURN_IF_ERROR(collection.Insert(entity.key_, body).status());
    entity.saved_body_ = std::move(body);
    for (const auto& [index, value] : initial) {
      SHOAL_ASSIGN_OR_RETURN(const std::string operand, mapper_internal::Dump(value));
      SHOAL_RETURN_IF_ERROR(
          collection.Apply(entity.key_, model_->bindings[index].field, operand).status());
    }
    return entity;
  }

  // Reads `key`'s main document and the folded values of its sharded members (missing members
  // keep T's defaults; a sharded member never updated reads as its neutral element).
  [[nodiscard]] StatusOr<Entity<T>> Load(Collection& collection, std::string_view key,
                                         const ReadOptions& options = {}) const {
    SHOAL_RETURN_IF_ERROR(Ready());
    T object{};
    SHOAL_RETURN_IF_ERROR(model_->set_id(key, &object));
    SHOAL_ASSIGN_OR_RETURN(const Document document, collection.Get(key, options));
    const Json body = Json::parse(document.json, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) {
      return InvalidArgumentError("the document of '" + std::string(key) + "' is not an object");
    }
    for (const auto& binding : model_->bindings) {
      const auto it = body.find(binding.field);
      if (it != body.end()) {
        SHOAL_RETURN_IF_ERROR(binding.set(*it, &object));
      } else if (binding.sharded) {
        SHOAL_RETURN_IF_ERROR(binding.set(binding.neutral, &object));
      }
    }
    Entity<T> entity(model_, std::string(key), std::move(object));
    SHOAL_ASSIGN_OR_RETURN(entity.saved_body_, MainBody(entity.value_));
    return entity;
  }

  // Writes `entity` back: the main document when it changed, then the pending deltas.
  [[nodiscard]] Status Save(Collection& collection, Entity<T>& entity) const {
    SHOAL_RETURN_IF_ERROR(Ready());
    if (entity.model_ != model_) {
      return InvalidArgumentError("the entity belongs to another mapper");
    }
    SHOAL_ASSIGN_OR_RETURN(std::string body, MainBody(entity.value_));
    if (body != entity.saved_body_) {
      SHOAL_RETURN_IF_ERROR(collection.Upsert(entity.key_, body).status());
      entity.saved_body_ = std::move(body);
    }
    for (size_t i = 0; i < model_->bindings.size(); ++i) {
      const auto& binding = model_->bindings[i];
      if (binding.sharded) {
        SHOAL_RETURN_IF_ERROR(Flush(collection, entity.key_, binding, &entity.pending_[i]));
      }
    }
    return OkStatus();
  }

 private:
  [[nodiscard]] Status Ready() const {
    SHOAL_RETURN_IF_ERROR(model_->error);
    if (!model_->get_id) return FailedPreconditionError("the mapper has no Id");
    return OkStatus();
  }

  // A copy of the model to change: entities keep referring to the one they were made with.
  std::shared_ptr<mapper_internal::Model<T>> Edit() {
    model_ = std::make_shared<mapper_internal::Model<T>>(*model_);
    return model_;
  }

  template <typename M>
  void Bind(std::string field, M T::*member, std::optional<ShardedOptions> options) {
    auto model = Edit();
    if (!model->error.ok()) return;
    const auto fail = [&model, &field](std::string_view why) {
      model->error = InvalidArgumentError("field '" + field + "': " + std::string(why));
    };
    if (field.empty()) return fail("the name is empty");
    for (const auto& binding : model->bindings) {
      if (binding.field == field) return fail("declared twice");
      if (binding.is_member(typeid(member), &member)) return fail("its member is mapped twice");
    }
    mapper_internal::Binding<T> binding;
    binding.field = field;
    binding.get = [member, field](const T& object, Json* out) {
      return mapper_internal::ToJson(object.*member, field, out);
    };
    binding.set = [member, field](const Json& json, T* object) {
      return mapper_internal::FromJson(json, field, &(object->*member));
    };
    binding.is_member = [member](const std::type_info& type, const void* pointer) {
      return type == typeid(M T::*) && *static_cast<M T::*const*>(pointer) == member;
    };
    if (options.has_value()) {
      if (options->automatic && options->shards != 0) {
        return fail("an automatic field takes no shard count");
      }
      binding.sharded = true;
      if (options->neutral.has_value()) {
        binding.neutral = *options->neutral;
      } else {
        auto neutral = NeutralOf(options->fold);
        if (!neutral.ok()) return fail(neutral.status().message());
        binding.neutral = *std::move(neutral);
      }
      binding.options = *std::move(options);
    }
    model->bindings.push_back(std::move(binding));
  }

  [[nodiscard]] StatusOr<std::string> MainBody(const T& object) const {
    Json body = Json::object();
    for (const auto& binding : model_->bindings) {
      if (binding.sharded) continue;
      SHOAL_RETURN_IF_ERROR(binding.get(object, &body[binding.field]));
    }
    return mapper_internal::Dump(body);
  }

  // Folds one member's pending delta into one shard and resets it.
  [[nodiscard]] static Status Flush(Collection& collection, const std::string& key,
                                    const mapper_internal::Binding<T>& binding,
                                    mapper_internal::Pending* pending) {
    if (pending->delta == binding.neutral) {
      pending->operands.clear();
      return OkStatus();
    }
    const std::string& fold = binding.options.fold;
    SHOAL_ASSIGN_OR_RETURN(const bool one, mapper_internal::IsOneOperand(binding, pending->delta));
    if (one) {
      SHOAL_ASSIGN_OR_RETURN(const std::string delta, mapper_internal::Dump(pending->delta));
      SHOAL_RETURN_IF_ERROR(collection.Apply(key, binding.field, delta).status());
    } else {
      // The delta is no operand of its own fold: send what it was made of, one by one.
      for (size_t sent = 0; sent < pending->operands.size(); ++sent) {
        StatusOr<std::string> operand = mapper_internal::Dump(pending->operands[sent]);
        Status status = operand.ok() ? collection.Apply(key, binding.field, *operand).status()
                                     : operand.status();
        if (status.ok()) continue;
        pending->operands.erase(pending->operands.begin(),
                                pending->operands.begin() + static_cast<ptrdiff_t>(sent));
        Json rest = binding.neutral;
        for (const auto& operand : pending->operands) {
          SHOAL_ASSIGN_OR_RETURN(const Json one, LiftOperand(fold, operand));
          SHOAL_ASSIGN_OR_RETURN(rest, FoldValues(fold, rest, one));
        }
        pending->delta = std::move(rest);
        return status;
      }
    }
    pending->delta = binding.neutral;
    pending->operands.clear();
    return OkStatus();
  }

  std::shared_ptr<mapper_internal::Model<T>> model_;
};

}  // namespace shoal
