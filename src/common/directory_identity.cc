#include "src/common/directory_identity.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace shoal {

StatusOr<DirectoryIdentity> DirectoryIdentity::Of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return IoError(fmt::format("stat {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return IoError(fmt::format("{} is not a directory", path));
  DirectoryIdentity identity;
  identity.path_ = path;
  identity.device_ = static_cast<uint64_t>(st.st_dev);
  identity.inode_ = static_cast<uint64_t>(st.st_ino);
  return identity;
}

Status DirectoryIdentity::Check() const {
  if (path_.empty()) return OkStatus();
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return IoError(fmt::format(
          "the directory {} was removed while this process had its files open ({}); what it "
          "writes there now is lost at its next start",
          path_, std::strerror(error)));
    }
    return IoError(fmt::format("stat {}: {}", path_, std::strerror(error)));
  }
  if (static_cast<uint64_t>(st.st_dev) != device_ || static_cast<uint64_t>(st.st_ino) != inode_) {
    return IoError(fmt::format(
        "the directory {} was replaced by another one while this process had its files open; "
        "what it writes to the old one is lost at its next start",
        path_));
  }
  return OkStatus();
}

}  // namespace shoal
