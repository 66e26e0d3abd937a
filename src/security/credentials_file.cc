#include "src/security/credentials_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "src/common/host_port.h"
#include "src/security/certificates.h"
#include "src/security/pem_files.h"

namespace shoal::security {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kScheme = "shoal://";

// `host_port` with the loopback names (localhost, 127.0.0.1, ::1) as one, lowercased: a
// cluster `shoal local` registered as 127.0.0.1:7400 is found when dialled as localhost:7400.
std::string Canonical(std::string_view host_port) {
  std::string out(host_port);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = out.rfind(':');
  if (colon == std::string::npos) return out;
  const std::string_view host = std::string_view(out).substr(0, colon);
  if (host == "localhost" || host == "127.0.0.1" || host == "[::1]" || host == "::1") {
    return "loopback" + out.substr(colon);
  }
  return out;
}

// The HOST:PORT entries of "shoal://A,B" or "A,B", Canonical.
std::set<std::string> AddressesOf(std::string_view cluster) {
  if (cluster.substr(0, kScheme.size()) == kScheme) cluster.remove_prefix(kScheme.size());
  std::set<std::string> out;
  while (!cluster.empty()) {
    const auto comma = cluster.find(',');
    out.emplace(Canonical(cluster.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    cluster.remove_prefix(comma + 1);
  }
  return out;
}

bool SharesAddress(std::string_view a, std::string_view b) {
  const auto left = AddressesOf(a);
  for (const auto& address : AddressesOf(b)) {
    if (left.contains(address)) return true;
  }
  return false;
}

std::string Resolved(const std::filesystem::path& base, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (base / path).lexically_normal().string();
}

StatusOr<Json> ReadJson(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return NotFoundError(fmt::format("{}: no such file", path));
  std::ifstream in(path);
  if (!in) return InvalidArgumentError(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return InvalidArgumentError(fmt::format("{} is not a JSON object", path));
  }
  if (json.contains("clusters") && !json["clusters"].is_array()) {
    return InvalidArgumentError(fmt::format("{}: \"clusters\" is not an array", path));
  }
  return json;
}

StatusOr<ClusterCredentials> EntryOf(const Json& entry, const std::string& path,
                                     const std::filesystem::path& base) {
  ClusterCredentials out;
  const auto field = [&](const char* name, std::string* value) -> Status {
    if (!entry.is_object() || !entry.contains(name) || !entry[name].is_string()) {
      return InvalidArgumentError(
          fmt::format("{}: every entry of \"clusters\" needs a string \"{}\"", path, name));
    }
    *value = entry[name].get<std::string>();
    return OkStatus();
  };
  SHOAL_RETURN_IF_ERROR(field("cluster", &out.cluster));
  SHOAL_RETURN_IF_ERROR(field("user", &out.user));
  SHOAL_RETURN_IF_ERROR(field("ca", &out.ca));
  SHOAL_RETURN_IF_ERROR(field("cert", &out.cert));
  SHOAL_RETURN_IF_ERROR(field("key", &out.key));
  if (entry.contains("password")) SHOAL_RETURN_IF_ERROR(field("password", &out.password));
  std::string_view coordinators = out.cluster;
  if (coordinators.substr(0, kScheme.size()) == kScheme) coordinators.remove_prefix(kScheme.size());
  SHOAL_RETURN_IF_ERROR(Prefixed(CheckHostPortList(coordinators), path));
  out.ca = Resolved(base, out.ca);
  out.cert = Resolved(base, out.cert);
  out.key = Resolved(base, out.key);
  return out;
}

// Holds flock(LOCK_EX) on `path` while alive.
class FileLock {
 public:
  explicit FileLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  [[nodiscard]] bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

std::string DefaultCredentialsPath() {
  if (const char* env = std::getenv(std::string(kCredentialsEnvironment).c_str());
      env != nullptr && *env != '\0') {
    return env;
  }
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config != nullptr && *config != '\0') {
    return (std::filesystem::path(config) / "shoal" / "credentials").string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (std::filesystem::path(home) / ".config" / "shoal" / "credentials").string();
  }
  return {};
}

StatusOr<std::vector<ClusterCredentials>> ReadCredentialsFile(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(Json json, ReadJson(path));
  const auto base = std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  std::vector<ClusterCredentials> out;
  if (!json.contains("clusters")) return out;
  for (const auto& entry : json["clusters"]) {
    SHOAL_ASSIGN_OR_RETURN(ClusterCredentials credentials, EntryOf(entry, path, base));
    out.push_back(std::move(credentials));
  }
  return out;
}

Status RegisterCredentials(const std::string& path, const ClusterCredentials& entry) {
  if (path.empty()) return InvalidArgumentError("no credentials file (HOME is not set)");
  const auto directory = std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    std::filesystem::create_directories(directory, ec);
    if (ec) return IoError(fmt::format("create {}: {}", directory.string(), ec.message()));
    std::filesystem::permissions(directory, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  FileLock lock(path + ".lock");
  if (!lock.ok()) return IoError(fmt::format("lock {}.lock: {}", path, std::strerror(errno)));
  Json json = Json::object();
  if (auto existing = ReadJson(path); existing.ok()) {
    json = std::move(*existing);
  } else if (existing.status().code() != StatusCode::kNotFound) {
    return existing.status();
  }
  Json clusters = Json::array();
  if (json.contains("clusters")) {
    for (const auto& old : json["clusters"]) {
      const bool same = old.is_object() && old.contains("cluster") && old["cluster"].is_string() &&
                        SharesAddress(old["cluster"].get<std::string>(), entry.cluster);
      if (!same) clusters.push_back(old);
    }
  }
  Json added{{"cluster", entry.cluster},
             {"user", entry.user},
             {"ca", entry.ca},
             {"cert", entry.cert},
             {"key", entry.key}};
  if (!entry.password.empty()) added["password"] = entry.password;
  clusters.push_back(std::move(added));
  json["clusters"] = std::move(clusters);
  return internal::WriteFileAtomically(path, json.dump(2) + "\n", 0600);
}

StatusOr<std::optional<TlsFiles>> ResolveClientTls(const ClientSecurityRequest& request,
                                                   std::string_view coordinators) {
  if (request.insecure) {
    if (!request.certs_dir.empty()) {
      return InvalidArgumentError("give either --insecure or --certs-dir, not both");
    }
    if (!request.user.empty()) {
      return InvalidArgumentError(
          fmt::format("--user {}: a cluster started with --insecure has no users", request.user));
    }
    return std::optional<TlsFiles>();
  }
  // Without a certs directory the identity is the credentials file's entry: a user named here
  // would be ignored, and the command would run as whoever that entry is.
  if (!request.user.empty() && request.certs_dir.empty()) {
    return InvalidArgumentError(fmt::format(
        "--user {} picks client.{}.crt of --certs-dir DIR, and no --certs-dir was given; to "
        "run as {} without it, write a credentials entry (`shoal credentials add --certs-dir DIR "
        "--user {} --password-stdin --file FILE`, docs/security.md) and give --credentials FILE",
        request.user, request.user, request.user, request.user));
  }
  const std::string user = request.user.empty() ? std::string(kDefaultUser) : request.user;
  if (!request.certs_dir.empty()) {
    SHOAL_RETURN_IF_ERROR(CheckUserName(user));
    return std::optional<TlsFiles>(ClientTlsFiles(request.certs_dir, user));
  }
  const std::string path =
      request.credentials_file.empty() ? DefaultCredentialsPath() : request.credentials_file;
  const std::string how = fmt::format(
      "give --certs-dir DIR (with ca.crt and client.USER.crt/.key from `shoal certs`, --user "
      "USER, default {}), a credentials file (--credentials FILE or ${}; `shoal credentials add` "
      "writes one; `shoal local` registers its cluster in {}), or --insecure for a cluster "
      "started with --insecure",
      kDefaultUser, kCredentialsEnvironment, path.empty() ? "~/.config/shoal/credentials" : path);
  if (path.empty()) return FailedPreconditionError("no credentials: " + how);
  auto entries = ReadCredentialsFile(path);
  if (!entries.ok()) {
    if (entries.status().code() == StatusCode::kNotFound) {
      return FailedPreconditionError(
          fmt::format("no credentials ({} does not exist): {}", path, how));
    }
    return entries.status();
  }
  const ClusterCredentials* chosen = nullptr;
  for (const auto& entry : *entries) {
    if (SharesAddress(entry.cluster, coordinators)) {
      chosen = &entry;
      break;
    }
  }
  if (chosen == nullptr && entries->size() == 1) chosen = &entries->front();
  if (chosen == nullptr) {
    std::string known;
    for (const auto& entry : *entries) known += (known.empty() ? "" : ", ") + entry.cluster;
    return FailedPreconditionError(fmt::format("no credentials for {} in {} (it has {}): {}",
                                               coordinators, path,
                                               known.empty() ? std::string("none") : known, how));
  }
  TlsFiles files{.ca_cert = chosen->ca, .cert = chosen->cert, .key = chosen->key};
  if (!chosen->password.empty()) {
    files.user = chosen->user;
    files.password = chosen->password;
  }
  return std::optional<TlsFiles>(std::move(files));
}

}  // namespace shoal::security
