#pragma once

// DirectoryIdentity: which directory a path named when a process opened it (device and inode),
// so that the process can tell later whether the directory is still there under that path.
// A database's files open under a directory that was removed (a cleaner of /tmp, an operator's
// rm -rf) or replaced keep taking writes, and everything written to them is gone at the next
// start: a process that finds its directory gone must stop rather than go on acknowledging.
//
// Thread-safety: a value type; Check may run on any thread.

#include <cstdint>
#include <string>

#include "src/common/status.h"

namespace shoal {

class DirectoryIdentity {
 public:
  DirectoryIdentity() = default;

  // The directory `path` names now: an IoError if it cannot be read or is not a directory.
  [[nodiscard]] static StatusOr<DirectoryIdentity> Of(const std::string& path);

  // OK while `path` still names the same directory; an IoError naming the path and what happened
  // (it was removed, or another directory took its place) otherwise. An empty identity (default
  // constructed) checks nothing.
  [[nodiscard]] Status Check() const;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t device_ = 0;
  uint64_t inode_ = 0;
};

}  // namespace shoal
