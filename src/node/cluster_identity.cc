#include "src/node/cluster_identity.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace shoal::node {

StatusOr<ClusterIdentity> ClusterIdentity::Open(const std::string& data_dir) {
  std::string path = data_dir + "/cluster-id";
  std::ifstream in(path);
  if (!in) return ClusterIdentity(std::move(path), 0);
  std::stringstream text;
  text << in.rdbuf();
  std::string value = text.str();
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  uint64_t id = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), id, 16);
  if (error != std::errc() || end != value.data() + value.size() || id == 0) {
    return InvalidArgumentError(fmt::format(
        "{}: {:?} is not a cluster id (16 hex digits); restore it, or delete the file only if "
        "this directory's data belongs to the cluster the node is started in",
        path, value));
  }
  return ClusterIdentity(std::move(path), id);
}

Status ClusterIdentity::Admit(uint64_t cluster) {
  if (cluster == 0 || cluster == id_) return OkStatus();
  if (id_ != 0) return transport::OtherClusterError(id_, cluster);
  // Written to a temporary file, synced and renamed: a crash leaves the old state or the new.
  const std::string temporary = path_ + ".tmp";
  const std::string text = fmt::format("{:016x}\n", cluster);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(fmt::format("create {}: {}", temporary, std::strerror(errno)));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = written && ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(temporary.c_str(), path_.c_str()) != 0) {
    return IoError(fmt::format("write {}: {}", path_, std::strerror(errno)));
  }
  id_ = cluster;
  return OkStatus();
}

}  // namespace shoal::node
