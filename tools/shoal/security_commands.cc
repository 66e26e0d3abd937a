// `shoal certs`, `shoal credentials`, and the security options of the other commands
// (security_flags.h, docs/security.md).

#include <fmt/format.h>
#include <grpc/support/log.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/common/log.h"
#include "src/net/uri.h"
#include "src/security/cert_expiry.h"
#include "src/security/certificates.h"
#include "src/security/credentials_file.h"
#include "src/security/passwords.h"
#include "src/security/revocation.h"
#include "src/security/tls_files.h"
#include "tools/shoal/password_input.h"
#include "tools/shoal/security_flags.h"

namespace shoal::tools {
namespace {

// gRPC's own log lines (a failed handshake is logged at each reconnection attempt) say nothing a
// client command's final error does not, so the client commands drop them.
void DropGrpcLog(gpr_log_func_args* /*args*/) {}
void QuietGrpcLog() { gpr_set_log_function(&DropGrpcLog); }

// A server's gRPC log lines (failed handshakes of peers without a cluster certificate, files the
// certificate watcher cannot read) as events of its own log, so that --log-format json stays one
// JSON object per line.
void GrpcLogAsEvent(gpr_log_func_args* args) {
  const char* message = args->message != nullptr ? args->message : "";
  const char* file = args->file != nullptr ? args->file : "";
  log::Warning("grpc.log", {{"message", std::string_view(message)},
                            {"source", fmt::format("{}:{}", file, args->line)}});
}

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
  return 1;
}

struct CertsFlags {
  std::string certs_dir;
  std::string ca_key;
  std::vector<std::string> hosts;
  std::string user;
  std::vector<std::string> revoke_certs;
  std::vector<std::string> revoke_serials;
  std::string crl_dir;    // "": security::DefaultCrlDir
  int lifetime_days = 0;  // 0: the kind's default
  bool overwrite = false;
  bool json = false;
};

void PrintWritten(const std::vector<std::string>& paths) {
  for (const auto& path : paths) std::printf("wrote %s\n", path.c_str());
}

int RunCreateCa(const CertsFlags& flags) {
  const Status status = security::CreateCa(
      {.certs_dir = flags.certs_dir,
       .lifetime_days = flags.lifetime_days > 0 ? flags.lifetime_days : security::kCaLifetimeDays,
       .overwrite = flags.overwrite});
  if (!status.ok()) return Fail(status);
  PrintWritten({security::CaCertPath(flags.certs_dir), security::CaKeyPath(flags.certs_dir)});
  std::printf("keep %s secret: whoever has it can issue certificates the cluster trusts\n",
              security::CaKeyPath(flags.certs_dir).c_str());
  return 0;
}

int RunCreateNode(const CertsFlags& flags) {
  const Status status = security::CreateNodeCert(
      {.certs_dir = flags.certs_dir,
       .ca_key = flags.ca_key,
       .hosts = flags.hosts,
       .lifetime_days = flags.lifetime_days > 0 ? flags.lifetime_days : security::kLeafLifetimeDays,
       .overwrite = flags.overwrite});
  if (!status.ok()) return Fail(status);
  PrintWritten({security::NodeCertPath(flags.certs_dir), security::NodeKeyPath(flags.certs_dir)});
  return 0;
}

int RunCreateClient(const CertsFlags& flags) {
  const Status status = security::CreateClientCert(
      {.certs_dir = flags.certs_dir,
       .ca_key = flags.ca_key,
       .user = flags.user,
       .lifetime_days = flags.lifetime_days > 0 ? flags.lifetime_days : security::kLeafLifetimeDays,
       .overwrite = flags.overwrite});
  if (!status.ok()) return Fail(status);
  PrintWritten({security::ClientCertPath(flags.certs_dir, flags.user),
                security::ClientKeyPath(flags.certs_dir, flags.user)});
  return 0;
}

int RunList(const CertsFlags& flags) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(flags.certs_dir, ec)) {
    if (entry.path().extension() == ".crt") files.push_back(entry.path().string());
  }
  if (ec) return Fail(NotFoundError(fmt::format("{}: {}", flags.certs_dir, ec.message())));
  std::sort(files.begin(), files.end());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& file : files) {
    auto info = security::ReadCertificate(file);
    if (!info.ok()) return Fail(info.status());
    std::vector<std::string> names = info->dns_names;
    names.insert(names.end(), info->ip_addresses.begin(), info->ip_addresses.end());
    const std::string ca = security::CaCertPath(flags.certs_dir);
    const Status trusted = security::VerifyCertificate(ca, file);
    const bool revoked =
        trusted.ok() && !security::VerifyNotRevoked(ca, security::DefaultCrlDir(ca), file).ok();
    const int64_t seconds_left = info->not_after_unix - static_cast<int64_t>(std::time(nullptr));
    const int64_t days_left = security::DaysLeft(seconds_left);
    std::string warning;
    if (seconds_left < 0) {
      warning = "  EXPIRED";
    } else if (days_left < security::kCertExpiryWarningDays) {
      warning = fmt::format("  EXPIRES IN {} DAYS", days_left);
    }
    if (!trusted.ok() && seconds_left >= 0) warning += "  NOT TRUSTED by ca.crt";
    if (revoked) warning += "  REVOKED";
    if (flags.json) {
      out.push_back({{"file", file},
                     {"common_name", info->common_name},
                     {"issuer", info->issuer_common_name},
                     {"serial", info->serial_hex},
                     {"hosts", names},
                     {"not_after", security::DateOf(info->not_after_unix)},
                     {"days_left", days_left},
                     {"trusted", trusted.ok() && !revoked},
                     {"revoked", revoked}});
    } else {
      std::string hosts;
      for (const auto& name : names) hosts += (hosts.empty() ? "" : ",") + name;
      std::printf("%-24s CN=%-16s expires %s%s%s%s\n",
                  std::filesystem::path(file).filename().c_str(), info->common_name.c_str(),
                  security::DateOf(info->not_after_unix).c_str(), hosts.empty() ? "" : " hosts ",
                  hosts.c_str(), warning.c_str());
    }
  }
  if (flags.json) std::printf("%s\n", out.dump().c_str());
  return 0;
}

void PrintRevocationList(const security::RevocationList& list) {
  std::printf("%s  CRL number %llu  updated %s  next update %s  %zu revoked\n", list.path.c_str(),
              static_cast<unsigned long long>(list.number),
              security::DateOf(list.last_update_unix).c_str(),
              security::DateOf(list.next_update_unix).c_str(), list.revoked.size());
  if (list.next_update_unix < static_cast<int64_t>(std::time(nullptr))) {
    std::printf(
        "  EXPIRED: every certificate of %s is refused; revoke again (any serial of the list) to "
        "issue the next CRL\n",
        list.issuer_common_name.c_str());
  }
  for (const auto& entry : list.revoked) {
    std::printf("  %s  revoked %s\n", entry.serial_hex.c_str(),
                security::DateOf(entry.revoked_unix).c_str());
  }
}

int RunRevoke(const CertsFlags& flags) {
  if (flags.revoke_certs.empty() && flags.revoke_serials.empty()) {
    return Fail(InvalidArgumentError("give --cert FILE or --serial HEX (each repeatable)"));
  }
  auto list = security::Revoke({.certs_dir = flags.certs_dir,
                                .ca_key = flags.ca_key,
                                .crl_dir = flags.crl_dir,
                                .cert_files = flags.revoke_certs,
                                .serials = flags.revoke_serials,
                                .lifetime_days = flags.lifetime_days});
  if (!list.ok()) return Fail(list.status());
  PrintWritten({list->path});
  PrintRevocationList(*list);
  std::printf(
      "copy the directory %s to every machine and client (beside ca.crt, or --crl-dir): new "
      "connections check it at once, open ones are not closed (docs/security.md)\n",
      std::filesystem::path(list->path).parent_path().c_str());
  return 0;
}

int RunListRevoked(const CertsFlags& flags) {
  const std::string ca = security::CaCertPath(flags.certs_dir);
  const std::string dir = flags.crl_dir.empty() ? security::DefaultCrlDir(ca) : flags.crl_dir;
  auto lists = security::ReadRevocationLists(ca, dir);
  if (!lists.ok()) return Fail(lists.status());
  if (flags.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& list : *lists) {
      nlohmann::json revoked = nlohmann::json::array();
      for (const auto& entry : list.revoked) {
        revoked.push_back(
            {{"serial", entry.serial_hex}, {"revoked", security::DateOf(entry.revoked_unix)}});
      }
      out.push_back({{"file", list.path},
                     {"issuer", list.issuer_common_name},
                     {"number", list.number},
                     {"last_update", security::DateOf(list.last_update_unix)},
                     {"next_update", security::DateOf(list.next_update_unix)},
                     {"revoked", revoked}});
    }
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  if (lists->empty()) std::printf("%s: nothing revoked\n", dir.c_str());
  for (const auto& list : *lists) PrintRevocationList(list);
  return 0;
}

struct CredentialsFlags {
  std::string cluster{kDefaultCluster};
  std::string certs_dir;
  std::string user = std::string(security::kDefaultUser);
  std::string cert_user;  // "": the certificate of `user`
  bool password_stdin = false;
  std::string file;
};

int RunCredentialsAdd(const CredentialsFlags& flags) {
  auto coordinators = net::CoordinatorsOf(flags.cluster);
  if (!coordinators.ok()) return Fail(coordinators.status());
  if (Status valid = security::CheckUserName(flags.user); !valid.ok()) return Fail(valid);
  const std::string cert_user = flags.cert_user.empty() ? flags.user : flags.cert_user;
  if (Status valid = security::CheckUserName(cert_user); !valid.ok()) return Fail(valid);
  // Without a password the server takes the certificate's name as the user: an entry naming
  // another user would claim an identity it never presents.
  if (cert_user != flags.user && !flags.password_stdin) {
    return Fail(InvalidArgumentError(
        fmt::format("--cert-user {} authenticates as '{}', not '{}': give --password-stdin to "
                    "authenticate as '{}' by password, or leave out --cert-user",
                    cert_user, cert_user, flags.user, flags.user)));
  }
  const std::string dir = std::filesystem::absolute(flags.certs_dir).lexically_normal().string();
  const security::TlsFiles files = security::ClientTlsFiles(dir, cert_user);
  if (Status valid = security::CheckTlsFiles(files); !valid.ok()) {
    // Every client presents a certificate of the cluster's CA; a user who signs in by password
    // may present any (the password decides the user).
    if (valid.code() != StatusCode::kNotFound || !flags.cert_user.empty()) return Fail(valid);
    return Fail(Prefixed(
        valid,
        fmt::format(
            "{} has no client certificate in {} (every client presents one of the "
            "cluster's CA): create one with `shoal certs create-client --certs-dir {} --user {}`{}",
            cert_user, dir, dir, cert_user,
            flags.password_stdin ? ", or present another user's with --cert-user NAME (the "
                                   "password decides who you are)"
                                 : "")));
  }
  std::string password;
  if (flags.password_stdin) {
    auto line = ReadPasswordLine();
    if (!line.ok()) return Fail(line.status());
    if (Status valid = security::CheckPassword(*line); !valid.ok()) return Fail(valid);
    password = *std::move(line);
  }
  const std::string path = flags.file.empty() ? security::DefaultCredentialsPath() : flags.file;
  const Status status = security::RegisterCredentials(path, {.cluster = "shoal://" + *coordinators,
                                                             .user = flags.user,
                                                             .ca = files.ca_cert,
                                                             .cert = files.cert,
                                                             .key = files.key,
                                                             .password = std::move(password)});
  if (!status.ok()) return Fail(status);
  std::printf(
      "%s: shoal://%s as %s%s\n", path.c_str(), coordinators->c_str(), flags.user.c_str(),
      flags.password_stdin ? fmt::format(" (password; certificate of {})", cert_user).c_str() : "");
  return 0;
}

CLI::App* CertsCommand(CLI::App* certs, const std::string& name, const std::string& help,
                       const std::shared_ptr<CertsFlags>& flags) {
  CLI::App* command = certs->add_subcommand(name, help);
  command->add_option("--certs-dir", flags->certs_dir, "The certs directory")->required();
  return command;
}

void AddIssueOptions(CLI::App* command, CertsFlags* flags, int default_days) {
  command->add_option("--ca-key", flags->ca_key, "The CA's key (default: CERTS_DIR/ca.key)");
  command
      ->add_option("--lifetime-days", flags->lifetime_days,
                   fmt::format("Validity in days (default {})", default_days))
      ->check(CLI::Range(1, 36500));
  command->add_flag("--overwrite", flags->overwrite,
                    "Replace existing files (rotation: running processes reload them)");
}

}  // namespace

void AddAuthLimitOptions(CLI::App* command, AuthLimitFlags* flags) {
  constexpr int64_t kMaxFailures = 1'000'000;
  command
      ->add_option("--max-password-failures-per-address", flags->max_failures_per_address,
                   "Failed password attempts from one client address (host) within 60 s that "
                   "block its password attempts at this process (docs/security.md)")
      ->check(CLI::Range(int64_t{1}, kMaxFailures))
      ->capture_default_str();
  command
      ->add_option("--password-block-seconds", flags->block_seconds,
                   "How long an address or a user name past its failures is blocked")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400}))
      ->capture_default_str();
  command
      ->add_option("--max-password-failures-per-user", flags->max_failures_per_user,
                   "Failed password attempts for one user name within 60 s, from any address, "
                   "that stop verifying new passwords for it at this process")
      ->check(CLI::Range(int64_t{1}, kMaxFailures))
      ->capture_default_str();
  command
      ->add_option("--max-password-verifications", flags->max_verifications,
                   "Argon2id password verifications at once in this process (19 MiB each)")
      ->check(CLI::Range(int64_t{1}, int64_t{64}))
      ->capture_default_str();
}

StatusOr<security::AuthenticatorOptions> AuthenticatorOptionsOf(const AuthLimitFlags& flags) {
  const auto check = [](std::string_view flag, int64_t value) {
    if (value >= 1 && value <= std::numeric_limits<uint32_t>::max()) return OkStatus();
    return InvalidArgumentError(fmt::format("{} must be at least 1, not {}", flag, value));
  };
  SHOAL_RETURN_IF_ERROR(
      check("--max-password-failures-per-address", flags.max_failures_per_address));
  SHOAL_RETURN_IF_ERROR(check("--password-block-seconds", flags.block_seconds));
  SHOAL_RETURN_IF_ERROR(check("--max-password-failures-per-user", flags.max_failures_per_user));
  SHOAL_RETURN_IF_ERROR(check("--max-password-verifications", flags.max_verifications));
  security::AuthenticatorOptions options;
  options.throttle.max_failures_per_address = static_cast<uint32_t>(flags.max_failures_per_address);
  options.throttle.max_failures_per_user = static_cast<uint32_t>(flags.max_failures_per_user);
  options.throttle.backoff = std::chrono::seconds(flags.block_seconds);
  options.max_concurrent_verifications = static_cast<uint32_t>(flags.max_verifications);
  SHOAL_RETURN_IF_ERROR(security::CheckAuthenticatorOptions(options));
  return options;
}

std::vector<std::string> AuthLimitArgs(const AuthLimitFlags& flags) {
  return {"--max-password-failures-per-address",
          std::to_string(flags.max_failures_per_address),
          "--password-block-seconds",
          std::to_string(flags.block_seconds),
          "--max-password-failures-per-user",
          std::to_string(flags.max_failures_per_user),
          "--max-password-verifications",
          std::to_string(flags.max_verifications)};
}

void AddServerSecurityOptions(CLI::App* command, ServerSecurityFlags* flags) {
  command->add_option("--certs-dir", flags->certs_dir,
                      "Mutual TLS with ca.crt, node.crt and node.key of this directory "
                      "(`shoal certs`)");
  command->add_flag("--insecure", flags->insecure,
                    "No TLS: plaintext, and anyone who reaches the port can read and change "
                    "everything");
  command
      ->add_option("--cert-reload-seconds", flags->reload_seconds,
                   "How often the certificate, key and CA files are read again")
      ->check(CLI::Range(1u, 86'400u))
      ->capture_default_str();
  command->add_option("--crl-dir", flags->crl_dir,
                      "Certificates revoked by the CRLs of this directory are refused (`shoal "
                      "certs revoke`; default: crl/ beside ca.crt; missing: nothing revoked)");
  AddAuthLimitOptions(command, &flags->auth);
}

StatusOr<net::TransportSecurity> ServerSecurity(const ServerSecurityFlags& flags) {
  if (flags.insecure == !flags.certs_dir.empty()) {
    return InvalidArgumentError(
        flags.insecure
            ? "give either --certs-dir or --insecure, not both"
            : "give --certs-dir DIR (ca.crt, node.crt and node.key from `shoal certs "
              "create-ca` and `shoal certs create-node`) to serve over mutual TLS, or --insecure "
              "to serve plaintext to anyone who reaches the port");
  }
  SHOAL_ASSIGN_OR_RETURN(security::AuthenticatorOptions authentication,
                         AuthenticatorOptionsOf(flags.auth));
  if (flags.insecure) return net::TransportSecurity{.authentication = std::move(authentication)};
  security::TlsFiles files = security::NodeTlsFiles(flags.certs_dir);
  files.crl_dir = flags.crl_dir;
  return net::TransportSecurity{.tls = std::move(files),
                                .reload_seconds = flags.reload_seconds,
                                .authentication = std::move(authentication)};
}

void RouteGrpcLog() { gpr_set_log_function(&GrpcLogAsEvent); }

void WarnInsecure(const ServerSecurityFlags& flags) {
  if (!flags.insecure) return;
  log::Warning("security.insecure",
               {{"message",
                 "TLS is off (--insecure): traffic is plaintext and anyone who reaches this "
                 "process's port can read and change every document"}});
}

void AddClusterOption(CLI::App* command, std::string* cluster, const std::string& help) {
  command
      ->add_option("--cluster", *cluster,
                   help + " (default: $SHOAL_CLUSTER, else " + std::string(kDefaultCluster) + ")")
      ->envname("SHOAL_CLUSTER");
}

void AddClientSecurityOptions(CLI::App* command, ClientSecurityFlags* flags) {
  command->add_option("--certs-dir", flags->certs_dir,
                      "Mutual TLS with ca.crt and client.USER.crt/.key of this directory");
  command->add_option("--user", flags->user,
                      "With --certs-dir: whose client certificate "
                      "(default admin)");
  command->add_option("--credentials", flags->credentials,
                      "Credentials file (default: $SHOAL_CREDENTIALS, else "
                      "~/.config/shoal/credentials)");
  command->add_flag("--insecure", flags->insecure,
                    "Plaintext, for a cluster started with --insecure");
}

ConnectOptions ConnectOptionsOf(const ClientSecurityFlags& flags) {
  QuietGrpcLog();
  ConnectOptions options;
  options.insecure = flags.insecure;
  options.certs_dir = flags.certs_dir;
  options.user = flags.user;
  options.credentials_file = flags.credentials;
  // A command run against the wrong port, or a cluster not started, fails in 3 s, not 10: long
  // enough for a coordinator that `shoal local` restarts.
  options.connect_patience_ms = 3'000;
  return options;
}

StatusOr<net::TransportSecurity> ClientSecurity(const ClientSecurityFlags& flags,
                                                const std::string& coordinators) {
  QuietGrpcLog();
  SHOAL_ASSIGN_OR_RETURN(std::optional<security::TlsFiles> tls,
                         security::ResolveClientTls({.insecure = flags.insecure,
                                                     .certs_dir = flags.certs_dir,
                                                     .user = flags.user,
                                                     .credentials_file = flags.credentials},
                                                    coordinators));
  return net::TransportSecurity{.tls = std::move(tls)};
}

void AddCertsCommands(CLI::App& app) {
  CLI::App* certs = app.add_subcommand(
      "certs", "Create the cluster's CA, node and client certificates (docs/security.md)");
  certs->require_subcommand(1);

  auto ca = std::make_shared<CertsFlags>();
  CLI::App* c = CertsCommand(certs, "create-ca",
                             "A new cluster CA: ca.crt (copy it everywhere) and ca.key (keep it "
                             "secret)",
                             ca);
  c->add_option("--lifetime-days", ca->lifetime_days,
                fmt::format("Validity in days (default {})", security::kCaLifetimeDays))
      ->check(CLI::Range(1, 36500));
  c->add_flag("--overwrite", ca->overwrite, "Replace an existing CA");
  c->callback([ca] { std::exit(RunCreateCa(*ca)); });

  auto node = std::make_shared<CertsFlags>();
  CLI::App* n = CertsCommand(certs, "create-node",
                             "node.crt and node.key for coordinators and nodes, naming the hosts "
                             "they are dialled by (localhost, 127.0.0.1 and ::1 always)",
                             node);
  n->add_option("--host", node->hosts, "A DNS name or IP address (repeatable)");
  AddIssueOptions(n, node.get(), security::kLeafLifetimeDays);
  n->callback([node] { std::exit(RunCreateNode(*node)); });

  auto client = std::make_shared<CertsFlags>();
  CLI::App* u =
      CertsCommand(certs, "create-client",
                   "client.USER.crt and client.USER.key: a user's identity (CN = USER)", client);
  u->add_option("--user", client->user, "The user")->required();
  AddIssueOptions(u, client.get(), security::kLeafLifetimeDays);
  u->callback([client] { std::exit(RunCreateClient(*client)); });

  auto list = std::make_shared<CertsFlags>();
  CLI::App* l = CertsCommand(certs, "list",
                             "Each certificate of the directory: name, hosts, expiry, and whether "
                             "ca.crt trusts it",
                             list);
  l->add_flag("--json", list->json, "Print one JSON array");
  l->callback([list] { std::exit(RunList(*list)); });

  auto revoke = std::make_shared<CertsFlags>();
  CLI::App* r = CertsCommand(certs, "revoke",
                             "Add certificates to the CA's revocation list (crl/ beside ca.crt): "
                             "every process refuses them from its next connection",
                             revoke);
  r->add_option("--cert", revoke->revoke_certs, "A certificate file to revoke (repeatable)");
  r->add_option("--serial", revoke->revoke_serials,
                "A serial number in hex to revoke (repeatable; `shoal certs list --json`)");
  r->add_option("--ca-key", revoke->ca_key, "The CA's key (default: CERTS_DIR/ca.key)");
  r->add_option("--crl-dir", revoke->crl_dir, "Where the CRLs are (default: CERTS_DIR/crl)");
  r->add_option("--lifetime-days", revoke->lifetime_days,
                "The CRL's nextUpdate in days; past it, every certificate of the CA is refused "
                "(default: the CA's expiry)")
      ->check(CLI::Range(1, 36500));
  r->callback([revoke] { std::exit(RunRevoke(*revoke)); });

  auto revoked = std::make_shared<CertsFlags>();
  CLI::App* v = CertsCommand(certs, "list-revoked",
                             "The serial numbers each CA of ca.crt has revoked", revoked);
  v->add_option("--crl-dir", revoked->crl_dir, "Where the CRLs are (default: CERTS_DIR/crl)");
  v->add_flag("--json", revoked->json, "Print one JSON array");
  v->callback([revoked] { std::exit(RunListRevoked(*revoked)); });

  CLI::App* credentials = app.add_subcommand(
      "credentials", "The client credentials file the commands and Database::Connect read");
  credentials->require_subcommand(1);
  auto add = std::make_shared<CredentialsFlags>();
  CLI::App* a = credentials->add_subcommand(
      "add",
      "Register a cluster with a user's certificate or password, so that commands need no flags");
  AddClusterOption(a, &add->cluster, "shoal://HOST:PORT of the coordinator(s)");
  a->add_option("--certs-dir", add->certs_dir, "Directory with ca.crt and client.USER.crt/.key")
      ->required();
  a->add_option("--user", add->user, "The user")->capture_default_str();
  a->add_option("--cert-user", add->cert_user,
                "Whose client certificate of --certs-dir to present (default: --user); another "
                "user's needs --password-stdin");
  a->add_flag("--password-stdin", add->password_stdin,
              "Authenticate as --user by password, read from the first line of stdin (stored in "
              "the file, which is 0600)");
  a->add_option("--file", add->file,
                "The credentials file (default: $SHOAL_CREDENTIALS, else "
                "~/.config/shoal/credentials)");
  a->callback([add] { std::exit(RunCredentialsAdd(*add)); });
}

}  // namespace shoal::tools
