#include "src/storage/document.h"

#include <fmt/format.h>

namespace shoal::storage {

std::string Document::DebugString() const {
  constexpr size_t kShownBody = 64;
  std::string shown = body.substr(0, kShownBody);
  if (body.size() > kShownBody) shown += "...";
  return fmt::format("{{{} pk={:?} v={}{} body={}}}", collection.DebugString(), primary_key,
                     version, tombstone ? " tombstone" : "", shown);
}

}  // namespace shoal::storage
