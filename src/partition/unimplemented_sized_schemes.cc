// Placeholder constructors, removed as each scheme lands.
#include "src/partition/schemes.h"

namespace shoal::partition {
#define SHOAL_UNIMPLEMENTED_SCHEME(fn)                                                    \
  StatusOr<std::unique_ptr<Scheme>> fn(const SchemeOptions&, std::span<const NodeId>) { \
    return UnimplementedError(#fn);                                                      \
  }
SHOAL_UNIMPLEMENTED_SCHEME(NewRangeScheme)
SHOAL_UNIMPLEMENTED_SCHEME(NewExtendibleScheme)
}  // namespace shoal::partition
