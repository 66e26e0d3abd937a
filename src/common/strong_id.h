#pragma once

// StrongId<Tag, Rep>: a distinct integer type per kind of identifier, so that a NodeId can never
// be passed where a BucketId is expected. Value type; thread-compatible.

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace shoal {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using ValueType = Rep;

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}

  [[nodiscard]] constexpr Rep value() const { return value_; }

  friend constexpr auto operator<=>(StrongId, StrongId) = default;

  template <typename H>
  friend H AbslHashValue(H h, StrongId id) {
    return H::combine(std::move(h), id.value_);
  }

  friend std::ostream& operator<<(std::ostream& os, StrongId id) {
    return os << Tag::kPrefix << id.value_;
  }

  [[nodiscard]] std::string DebugString() const {
    return std::string(Tag::kPrefix) + std::to_string(value_);
  }

 private:
  Rep value_{};
};

}  // namespace shoal

template <typename Tag, typename Rep>
struct std::hash<shoal::StrongId<Tag, Rep>> {
  size_t operator()(shoal::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
