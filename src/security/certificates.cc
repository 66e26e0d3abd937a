#include "src/security/certificates.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "src/security/pem_files.h"

namespace shoal::security {
namespace {

using internal::BioPtr;
using internal::BnPtr;
using internal::Ca;
using internal::ExtensionPtr;
using internal::Free;
using internal::OpenSslError;
using internal::PkeyPtr;
using internal::StoreContextPtr;
using internal::StorePtr;
using internal::X509Ptr;

using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Free<GENERAL_NAMES_free>>;

constexpr std::string_view kOrganization = "Shoal";
constexpr int kMaxLifetimeDays = 36500;
// notBefore is this far back (the header's "Lifetimes").
constexpr long kBackdateSeconds = 3600;

std::string Join(std::string_view dir, std::string_view file) {
  return (std::filesystem::path(dir) / file).string();
}

Status CheckLifetime(int days) {
  if (days < 1 || days > kMaxLifetimeDays) {
    return InvalidArgumentError(
        fmt::format("lifetime must be 1 to {} days, not {}", kMaxLifetimeDays, days));
  }
  return OkStatus();
}

// kAlreadyExists naming the first of `paths` that exists, unless `overwrite`.
Status CheckAbsent(const std::vector<std::string>& paths, bool overwrite) {
  if (overwrite) return OkStatus();
  for (const auto& path : paths) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      return AlreadyExistsError(
          fmt::format("{} exists; pass --overwrite to replace it (e.g. to rotate it)", path));
    }
  }
  return OkStatus();
}

// Creates `dir` (0700) if it does not exist; an existing directory keeps its mode.
Status EnsureDirectory(const std::string& dir) {
  if (dir.empty()) return InvalidArgumentError("no certs directory given");
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return OkStatus();
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(fmt::format("create {}: {}", dir, ec.message()));
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  if (ec) return IoError(fmt::format("chmod {}: {}", dir, ec.message()));
  return OkStatus();
}

StatusOr<PkeyPtr> NewKey() {
  // ECDSA on P-256: small keys, fast handshakes, accepted by every TLS 1.2/1.3 peer.
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return InternalError("generate a P-256 key: " + OpenSslError());
  return key;
}

// A random positive 127-bit serial number.
Status SetRandomSerial(X509* cert) {
  BnPtr serial(BN_new());
  if (serial == nullptr || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert)) == nullptr) {
    return InternalError("serial number: " + OpenSslError());
  }
  return OkStatus();
}

std::string SerialHex(const X509* cert) {
  BnPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (serial == nullptr) return {};
  char* hex = BN_bn2hex(serial.get());
  if (hex == nullptr) return {};
  std::string out(hex);
  OPENSSL_free(hex);
  return out;
}

Status SetSubject(X509* cert, std::string_view common_name) {
  X509_NAME* name = X509_get_subject_name(cert);
  const std::string organization(kOrganization);
  const std::string cn(common_name);
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(organization.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1) {
    return InternalError("subject name: " + OpenSslError());
  }
  return OkStatus();
}

// One extension from OpenSSL's configuration syntax (constant values only: hosts and users go
// through AddSubjectAltNames, never through this syntax).
Status AddExtension(X509* cert, X509V3_CTX* context, int nid, const char* value) {
  ExtensionPtr extension(X509V3_EXT_conf_nid(nullptr, context, nid, value));
  if (extension == nullptr || X509_add_ext(cert, extension.get(), -1) != 1) {
    return InternalError(
        fmt::format("extension {}={}: {}", OBJ_nid2sn(nid), value, OpenSslError()));
  }
  return OkStatus();
}

bool IsIpAddress(const std::string& host) {
  in6_addr buffer{};
  return ::inet_pton(AF_INET, host.c_str(), &buffer) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &buffer) == 1;
}

// A DNS name (optionally "*." first): labels of letters, digits and '-', at most 253 bytes.
Status CheckDnsName(std::string_view host) {
  std::string_view rest = host;
  if (rest.substr(0, 2) == "*.") rest.remove_prefix(2);
  bool ok = !rest.empty() && host.size() <= 253 && rest.front() != '.' && rest.back() != '.';
  char previous = '.';
  for (char c : rest) {
    const bool label_char = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-';
    if (!(label_char || (c == '.' && previous != '.'))) ok = false;
    previous = c;
  }
  if (!ok) {
    return InvalidArgumentError(fmt::format("'{}' is neither an IP address nor a DNS name", host));
  }
  return OkStatus();
}

Status AddSubjectAltNames(X509* cert, const std::vector<std::string>& hosts) {
  GeneralNamesPtr names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return InternalError("subjectAltName: " + OpenSslError());
  for (const auto& host : hosts) {
    GENERAL_NAME* name = GENERAL_NAME_new();
    if (name == nullptr) return InternalError("subjectAltName: " + OpenSslError());
    if (IsIpAddress(host)) {
      ASN1_OCTET_STRING* ip = a2i_IPADDRESS(host.c_str());
      if (ip == nullptr) {
        GENERAL_NAME_free(name);
        return InvalidArgumentError(fmt::format("bad IP address '{}'", host));
      }
      GENERAL_NAME_set0_value(name, GEN_IPADD, ip);
    } else {
      ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
      if (dns == nullptr || ASN1_STRING_set(dns, host.data(), static_cast<int>(host.size())) != 1) {
        ASN1_IA5STRING_free(dns);
        GENERAL_NAME_free(name);
        return InternalError("subjectAltName: " + OpenSslError());
      }
      GENERAL_NAME_set0_value(name, GEN_DNS, dns);
    }
    if (sk_GENERAL_NAME_push(names.get(), name) == 0) {
      GENERAL_NAME_free(name);
      return InternalError("subjectAltName: " + OpenSslError());
    }
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1) {
    return InternalError("subjectAltName: " + OpenSslError());
  }
  return OkStatus();
}

// What kind of certificate Issue makes.
enum class CertKind { kCa, kNode, kClient };

struct IssueRequest {
  CertKind kind = CertKind::kClient;
  std::string common_name{};
  std::vector<std::string> hosts{};  // kNode only
  int lifetime_days = kLeafLifetimeDays;
  // The issuer; both null for the self-signed CA.
  const X509* issuer = nullptr;
  EVP_PKEY* issuer_key = nullptr;
};

// A new certificate for `key` as `request` says, signed with SHA-256.
StatusOr<X509Ptr> Issue(EVP_PKEY* key, const IssueRequest& request) {
  X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return InternalError("new certificate: " + OpenSslError());
  }
  SHOAL_RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), request.lifetime_days, 0, nullptr) ==
          nullptr) {
    return InternalError("validity: " + OpenSslError());
  }
  std::string common_name = request.common_name;
  if (request.kind == CertKind::kCa) {
    // Tells CAs apart in logs and in `shoal certs list` (during a CA rotation both are trusted).
    common_name += " " + SerialHex(cert.get()).substr(0, 8);
  }
  SHOAL_RETURN_IF_ERROR(SetSubject(cert.get(), common_name));
  const X509* issuer = request.issuer != nullptr ? request.issuer : cert.get();
  EVP_PKEY* issuer_key = request.issuer_key != nullptr ? request.issuer_key : key;
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer)) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return InternalError("issuer or key: " + OpenSslError());
  }
  X509V3_CTX context;
  X509V3_set_ctx(&context, const_cast<X509*>(issuer), cert.get(), nullptr, nullptr, 0);
  switch (request.kind) {
    case CertKind::kCa:
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_key_usage, "critical,keyCertSign,cRLSign"));
      break;
    case CertKind::kNode:
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_basic_constraints, "critical,CA:FALSE"));
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_key_usage, "critical,digitalSignature"));
      // A node serves, and dials other nodes and the coordinator with the same identity.
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_ext_key_usage, "serverAuth,clientAuth"));
      SHOAL_RETURN_IF_ERROR(AddSubjectAltNames(cert.get(), request.hosts));
      break;
    case CertKind::kClient:
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_basic_constraints, "critical,CA:FALSE"));
      SHOAL_RETURN_IF_ERROR(
          AddExtension(cert.get(), &context, NID_key_usage, "critical,digitalSignature"));
      SHOAL_RETURN_IF_ERROR(AddExtension(cert.get(), &context, NID_ext_key_usage, "clientAuth"));
      break;
  }
  // The subject key id first: the self-signed CA's authority key id is taken from it.
  SHOAL_RETURN_IF_ERROR(AddExtension(cert.get(), &context, NID_subject_key_identifier, "hash"));
  SHOAL_RETURN_IF_ERROR(
      AddExtension(cert.get(), &context, NID_authority_key_identifier, "keyid:always"));
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0) {
    return InternalError("sign: " + OpenSslError());
  }
  return cert;
}

Status WriteKeyAndCert(EVP_PKEY* key, const std::string& key_path, X509* cert,
                       const std::string& cert_path) {
  SHOAL_ASSIGN_OR_RETURN(std::string key_pem, internal::PrivateKeyPem(key));
  SHOAL_ASSIGN_OR_RETURN(std::string cert_pem, internal::CertificatePem(cert));
  // The key first: a watcher that reloads between the two renames sees a new key with the old
  // certificate for a moment and retries at its next refresh; the other order would briefly
  // serve nothing new either, so the key-first order costs nothing.
  SHOAL_RETURN_IF_ERROR(internal::WriteFileAtomically(key_path, key_pem, 0600));
  return internal::WriteFileAtomically(cert_path, cert_pem, 0644);
}

// The hosts of a node certificate: `given` (lowercased DNS names), then the loopback names,
// each once.
StatusOr<std::vector<std::string>> NodeHosts(const std::vector<std::string>& given) {
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  auto add = [&](std::string host) -> Status {
    if (!IsIpAddress(host)) {
      SHOAL_RETURN_IF_ERROR(CheckDnsName(host));
      for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (seen.insert(host).second) hosts.push_back(std::move(host));
    return OkStatus();
  };
  for (const auto& host : given) SHOAL_RETURN_IF_ERROR(add(host));
  for (const char* loopback : {"localhost", "127.0.0.1", "::1"}) {
    SHOAL_RETURN_IF_ERROR(add(loopback));
  }
  return hosts;
}

std::string NameEntry(const X509_NAME* name, int nid) {
  const int index = X509_NAME_get_index_by_NID(name, nid, -1);
  if (index < 0) return {};
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
  unsigned char* utf8 = nullptr;
  const int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(length));
  OPENSSL_free(utf8);
  return out;
}

int64_t UnixTime(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<int64_t>(::timegm(&tm));
}

CertificateInfo Describe(const X509* cert) {
  CertificateInfo info;
  info.common_name = NameEntry(X509_get_subject_name(cert), NID_commonName);
  info.issuer_common_name = NameEntry(X509_get_issuer_name(cert), NID_commonName);
  info.serial_hex = SerialHex(cert);
  info.not_before_unix = UnixTime(X509_get0_notBefore(cert));
  info.not_after_unix = UnixTime(X509_get0_notAfter(cert));
  X509* mutable_cert = const_cast<X509*>(cert);  // the accessors below cache extensions
  info.is_ca = X509_check_ca(mutable_cert) != 0;
  const uint32_t usage = X509_get_extended_key_usage(mutable_cert);
  info.server_auth = usage != UINT32_MAX && (usage & XKU_SSL_SERVER) != 0;
  info.client_auth = usage != UINT32_MAX && (usage & XKU_SSL_CLIENT) != 0;
  GeneralNamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    int type = 0;
    const auto* value = static_cast<const ASN1_STRING*>(GENERAL_NAME_get0_value(name, &type));
    const auto* bytes = ASN1_STRING_get0_data(value);
    const int length = ASN1_STRING_length(value);
    if (type == GEN_DNS) {
      info.dns_names.emplace_back(reinterpret_cast<const char*>(bytes),
                                  static_cast<size_t>(length));
    } else if (type == GEN_IPADD && (length == 4 || length == 16)) {
      char text[INET6_ADDRSTRLEN] = {};
      if (::inet_ntop(length == 4 ? AF_INET : AF_INET6, bytes, text, sizeof(text)) != nullptr) {
        info.ip_addresses.emplace_back(text);
      }
    }
  }
  return info;
}

}  // namespace

namespace internal {

StatusOr<Ca> LoadCa(const std::string& certs_dir, const std::string& ca_key) {
  const std::string key_path = ca_key.empty() ? CaKeyPath(certs_dir) : ca_key;
  SHOAL_ASSIGN_OR_RETURN(PkeyPtr key, ReadPrivateKey(key_path));
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, ReadCertificates(CaCertPath(certs_dir)));
  for (auto& cert : certs) {
    if (X509_check_private_key(cert.get(), key.get()) == 1) {
      return Ca{.cert = std::move(cert), .key = std::move(key)};
    }
  }
  ERR_clear_error();
  return FailedPreconditionError(
      fmt::format("{} belongs to no certificate of {}", key_path, CaCertPath(certs_dir)));
}

}  // namespace internal

std::string CaCertPath(std::string_view certs_dir) { return Join(certs_dir, "ca.crt"); }
std::string CaKeyPath(std::string_view certs_dir) { return Join(certs_dir, "ca.key"); }
std::string NodeCertPath(std::string_view certs_dir) { return Join(certs_dir, "node.crt"); }
std::string NodeKeyPath(std::string_view certs_dir) { return Join(certs_dir, "node.key"); }
std::string ClientCertPath(std::string_view certs_dir, std::string_view user) {
  return Join(certs_dir, fmt::format("client.{}.crt", user));
}
std::string ClientKeyPath(std::string_view certs_dir, std::string_view user) {
  return Join(certs_dir, fmt::format("client.{}.key", user));
}

Status CheckUserName(std::string_view user) {
  bool ok = !user.empty() && user.size() <= 64 && user.front() != '.' && user.front() != '-';
  for (char c : user) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '.' && c != '-') {
      ok = false;
    }
  }
  if (!ok) {
    return InvalidArgumentError(fmt::format(
        "user '{}': 1 to 64 letters, digits, '_', '.' and '-', starting with a letter, a digit "
        "or '_'",
        user));
  }
  if (user == kNodeCommonName) {
    return InvalidArgumentError(
        fmt::format("user '{}' is reserved for node certificates", kNodeCommonName));
  }
  return OkStatus();
}

Status CreateCa(const CaOptions& options) {
  SHOAL_RETURN_IF_ERROR(CheckLifetime(options.lifetime_days));
  SHOAL_RETURN_IF_ERROR(EnsureDirectory(options.certs_dir));
  const std::string cert_path = CaCertPath(options.certs_dir);
  const std::string key_path = CaKeyPath(options.certs_dir);
  SHOAL_RETURN_IF_ERROR(CheckAbsent({cert_path, key_path}, options.overwrite));
  SHOAL_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  SHOAL_ASSIGN_OR_RETURN(X509Ptr cert, Issue(key.get(), {.kind = CertKind::kCa,
                                                         .common_name = "Shoal CA",
                                                         .hosts = {},
                                                         .lifetime_days = options.lifetime_days,
                                                         .issuer = nullptr,
                                                         .issuer_key = nullptr}));
  return WriteKeyAndCert(key.get(), key_path, cert.get(), cert_path);
}

Status CreateNodeCert(const NodeCertOptions& options) {
  SHOAL_RETURN_IF_ERROR(CheckLifetime(options.lifetime_days));
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> hosts, NodeHosts(options.hosts));
  const std::string cert_path = NodeCertPath(options.certs_dir);
  const std::string key_path = NodeKeyPath(options.certs_dir);
  SHOAL_RETURN_IF_ERROR(CheckAbsent({cert_path, key_path}, options.overwrite));
  SHOAL_ASSIGN_OR_RETURN(Ca ca, internal::LoadCa(options.certs_dir, options.ca_key));
  SHOAL_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  SHOAL_ASSIGN_OR_RETURN(X509Ptr cert,
                         Issue(key.get(), {.kind = CertKind::kNode,
                                           .common_name = std::string(kNodeCommonName),
                                           .hosts = hosts,
                                           .lifetime_days = options.lifetime_days,
                                           .issuer = ca.cert.get(),
                                           .issuer_key = ca.key.get()}));
  return WriteKeyAndCert(key.get(), key_path, cert.get(), cert_path);
}

Status CreateClientCert(const ClientCertOptions& options) {
  SHOAL_RETURN_IF_ERROR(CheckLifetime(options.lifetime_days));
  SHOAL_RETURN_IF_ERROR(CheckUserName(options.user));
  const std::string cert_path = ClientCertPath(options.certs_dir, options.user);
  const std::string key_path = ClientKeyPath(options.certs_dir, options.user);
  SHOAL_RETURN_IF_ERROR(CheckAbsent({cert_path, key_path}, options.overwrite));
  SHOAL_ASSIGN_OR_RETURN(Ca ca, internal::LoadCa(options.certs_dir, options.ca_key));
  SHOAL_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  SHOAL_ASSIGN_OR_RETURN(X509Ptr cert, Issue(key.get(), {.kind = CertKind::kClient,
                                                         .common_name = options.user,
                                                         .hosts = {},
                                                         .lifetime_days = options.lifetime_days,
                                                         .issuer = ca.cert.get(),
                                                         .issuer_key = ca.key.get()}));
  return WriteKeyAndCert(key.get(), key_path, cert.get(), cert_path);
}

std::string DateOf(int64_t unix_seconds) {
  const std::time_t time = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::gmtime_r(&time, &tm);
  char text[32] = {};
  std::strftime(text, sizeof(text), "%Y-%m-%d", &tm);
  return text;
}

StatusOr<CertificateInfo> ReadCertificate(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, internal::ReadCertificates(path));
  return Describe(certs.front().get());
}

StatusOr<CertificateInfo> ParseCertificate(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(bio == nullptr ? nullptr : PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) return InvalidArgumentError("not a PEM certificate: " + OpenSslError());
  return Describe(cert.get());
}

Status VerifyCertificate(const std::string& ca_path, const std::string& cert_path) {
  // Both read first: a missing file is named as such, not as a verification failure.
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> roots, internal::ReadCertificates(ca_path));
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, internal::ReadCertificates(cert_path));
  StorePtr store(X509_STORE_new());
  if (store == nullptr) return InternalError("X509_STORE_new: " + OpenSslError());
  for (const auto& root : roots) {
    if (X509_STORE_add_cert(store.get(), root.get()) != 1) {
      return InternalError("trust " + ca_path + ": " + OpenSslError());
    }
  }
  StoreContextPtr context(X509_STORE_CTX_new());
  if (context == nullptr ||
      X509_STORE_CTX_init(context.get(), store.get(), certs.front().get(), nullptr) != 1) {
    return InternalError("X509_STORE_CTX_init: " + OpenSslError());
  }
  if (X509_verify_cert(context.get()) != 1) {
    const int error = X509_STORE_CTX_get_error(context.get());
    ERR_clear_error();
    return UnauthenticatedError(fmt::format("{} is not trusted by {}: {}", cert_path, ca_path,
                                            X509_verify_cert_error_string(error)));
  }
  return OkStatus();
}

Status CheckKeyMatches(const std::string& cert_path, const std::string& key_path) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, internal::ReadCertificates(cert_path));
  SHOAL_ASSIGN_OR_RETURN(PkeyPtr key, internal::ReadPrivateKey(key_path));
  if (X509_check_private_key(certs.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return FailedPreconditionError(
        fmt::format("{} is not the private key of {}", key_path, cert_path));
  }
  return OkStatus();
}

}  // namespace shoal::security
