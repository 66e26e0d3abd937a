#pragma once

// Constructors of the concrete schemes; use MakeScheme() (scheme.h) unless a test needs one
// scheme's own type. Each validates its inputs and returns InvalidArgument on bad ones.

#include <memory>
#include <span>

#include "src/partition/scheme.h"

namespace shoal::partition {

[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewModuloScheme(const SchemeOptions& options,
                                                                std::span<const NodeId> nodes);
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewRangeScheme(const SchemeOptions& options,
                                                               std::span<const NodeId> nodes);
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewRingScheme(const SchemeOptions& options,
                                                              std::span<const NodeId> nodes);
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewRendezvousScheme(const SchemeOptions& options,
                                                                    std::span<const NodeId> nodes);
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewJumpScheme(const SchemeOptions& options,
                                                              std::span<const NodeId> nodes);
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewExtendibleScheme(const SchemeOptions& options,
                                                                    std::span<const NodeId> nodes);
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> NewStaticScheme(const SchemeOptions& options,
                                                                std::span<const NodeId> nodes);

}  // namespace shoal::partition
