// Placeholder constructors, removed as each scheme lands.
#include "src/partition/schemes.h"

namespace shoal::partition {
#define SHOAL_UNIMPLEMENTED_SCHEME(fn)                                                    \
  StatusOr<std::unique_ptr<Scheme>> fn(const SchemeOptions&, std::span<const NodeId>) { \
    return UnimplementedError(#fn);                                                      \
  }
SHOAL_UNIMPLEMENTED_SCHEME(NewRingScheme)
SHOAL_UNIMPLEMENTED_SCHEME(NewRendezvousScheme)
SHOAL_UNIMPLEMENTED_SCHEME(NewJumpScheme)
SHOAL_UNIMPLEMENTED_SCHEME(NewStaticScheme)
}  // namespace shoal::partition
