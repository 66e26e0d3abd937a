#include "tools/shoal/local_security.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "proto/shoal.pb.h"
#include "src/net/admin_client.h"
#include "src/net/grpc_runtime.h"
#include "src/security/certificates.h"
#include "src/security/credentials_file.h"
#include "src/security/passwords.h"
#include "tools/shoal/security_flags.h"

namespace shoal::tools {
namespace {

bool Exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// The password of the only entry of shoal local's credentials file ("" if none).
std::string StoredPassword(const std::string& path) {
  auto entries = security::ReadCredentialsFile(path);
  if (!entries.ok() || entries->size() != 1) return {};
  return entries->front().password;
}

}  // namespace

StatusOr<LocalSecurity> PrepareLocalSecurity(const std::string& data_dir,
                                             const std::string& cluster, bool insecure) {
  LocalSecurity out;
  if (insecure) {
    out.secure = false;
    return out;
  }
  const std::string data = std::filesystem::absolute(data_dir).lexically_normal().string();
  out.certs_dir = data + "/certs";
  const std::string user(security::kDefaultUser);
  if (!Exists(security::CaCertPath(out.certs_dir))) {
    SHOAL_RETURN_IF_ERROR(security::CreateCa({.certs_dir = out.certs_dir}));
  }
  if (!Exists(security::NodeCertPath(out.certs_dir))) {
    SHOAL_RETURN_IF_ERROR(security::CreateNodeCert({.certs_dir = out.certs_dir, .hosts = {}}));
  }
  if (!Exists(security::ClientCertPath(out.certs_dir, user))) {
    SHOAL_RETURN_IF_ERROR(security::CreateClientCert({.certs_dir = out.certs_dir, .user = user}));
  }
  out.credentials_file = data + "/credentials";
  std::string password = StoredPassword(out.credentials_file);
  if (password.empty()) password = security::GeneratePassword();
  out.entry = security::ClusterCredentials{.cluster = "shoal://" + cluster,
                                           .user = user,
                                           .ca = security::CaCertPath(out.certs_dir),
                                           .cert = security::ClientCertPath(out.certs_dir, user),
                                           .key = security::ClientKeyPath(out.certs_dir, user),
                                           .password = std::move(password)};
  // Rewritten at each start: the port may have changed.
  std::error_code ec;
  std::filesystem::remove(out.credentials_file, ec);
  SHOAL_RETURN_IF_ERROR(security::RegisterCredentials(out.credentials_file, out.entry));
  return out;
}

void RegisterLocalCluster(LocalSecurity* security) {
  if (!security->secure) return;
  const std::string user_file = security::DefaultCredentialsPath();
  if (user_file.empty()) {
    security->registration_error = "neither SHOAL_CREDENTIALS nor HOME is set";
  } else if (Status registered = security::RegisterCredentials(user_file, security->entry);
             !registered.ok()) {
    security->registration_error = registered.ToString();
  } else {
    security->registered_in = user_file;
  }
}

StatusOr<std::unique_ptr<net::GrpcRuntime>> StartLocalRuntime(const LocalSecurity& security,
                                                              const std::string& cluster) {
  net::GrpcRuntimeOptions options{.coordinator = cluster};
  if (security.secure) {
    options.security.tls = security::ClientTlsFiles(security.certs_dir, security::kDefaultUser);
  }
  return net::GrpcRuntime::Start(options);
}

Status SetLocalAdminPassword(const LocalSecurity& security, net::GrpcRuntime& runtime) {
  if (!security.secure) return OkStatus();
  wire::AdminRequest request;
  request.mutable_set_password()->set_name(std::string(security::kDefaultUser));
  request.mutable_set_password()->set_password(security.entry.password);
  constexpr transport::Micros kTimeout = 10'000'000;
  SHOAL_ASSIGN_OR_RETURN(auto outcome,
                         net::AdminWithRepeat(runtime, request, {.call_timeout = kTimeout}));
  (void)outcome;
  return OkStatus();
}

std::vector<std::string> ChildSecurityArgs(const LocalSecurity& security) {
  if (!security.secure) return {"--insecure"};
  return {"--certs-dir", security.certs_dir};
}

ConnectOptions LocalConnectOptions(const LocalSecurity& security) {
  ConnectOptions options;
  options.insecure = !security.secure;
  if (security.secure) {
    options.certs_dir = security.certs_dir;
    options.user = std::string(security::kDefaultUser);
  }
  return options;
}

std::vector<std::string> LocalSecurityLines(const LocalSecurity& security,
                                            const std::string& cluster) {
  if (!security.secure) {
    return {
        "security     OFF (--insecure): plaintext, no client certificates; clients need "
        "--insecure"};
  }
  std::vector<std::string> lines;
  lines.push_back(fmt::format("security     mutual TLS; certificates in {}", security.certs_dir));
  // The commands dial kDefaultCluster unless told otherwise.
  const std::string uri = "shoal://" + cluster;
  const bool default_address = uri == kDefaultCluster;
  const std::string cluster_flag = default_address ? "" : " --cluster " + uri;
  if (!security.registered_in.empty()) {
    lines.push_back(
        default_address
            ? fmt::format("credentials  {} (the shoal commands need no flags)",
                          security.registered_in)
            : fmt::format("credentials  {} (the shoal commands need only --cluster {}, or "
                          "SHOAL_CLUSTER={} in the environment)",
                          security.registered_in, uri, uri));
  } else {
    lines.push_back(
        fmt::format("credentials  not registered ({}); give the commands --credentials "
                    "{}",
                    security.registration_error, security.credentials_file));
  }
  lines.push_back(
      fmt::format("elsewhere    SHOAL_CREDENTIALS={} shoal status{}, or shoal status --cluster {} "
                  "--certs-dir {} (docs/security.md)",
                  security.credentials_file, cluster_flag, uri, security.certs_dir));
  return lines;
}

}  // namespace shoal::tools
