#include "src/security/revocation.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "src/security/certificates.h"
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

using CrlPtr = std::unique_ptr<X509_CRL, Free<X509_CRL_free>>;
using IntegerPtr = std::unique_ptr<ASN1_INTEGER, Free<ASN1_INTEGER_free>>;
using TimePtr = std::unique_ptr<ASN1_TIME, Free<ASN1_TIME_free>>;

constexpr int kMaxLifetimeDays = 36500;
// lastUpdate is this far back, as certificates' notBefore: a CRL "not yet valid" on a machine
// whose clock is behind would fail its handshakes.
constexpr int64_t kBackdateSeconds = 3600;

int64_t UnixTime(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<int64_t>(::timegm(&tm));
}

std::string HexOf(const ASN1_INTEGER* serial) {
  BnPtr number(ASN1_INTEGER_to_BN(serial, nullptr));
  if (number == nullptr) return {};
  char* hex = BN_bn2hex(number.get());
  if (hex == nullptr) return {};
  std::string out(hex);
  OPENSSL_free(hex);
  return out;
}

std::string CommonName(const X509_NAME* name) {
  const int index = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (index < 0) return {};
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
  unsigned char* utf8 = nullptr;
  const int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(length));
  OPENSSL_free(utf8);
  return out;
}

// The hashed-directory name of `ca`'s CRL number `n` (the header's naming).
std::string CrlPath(const std::string& crl_dir, const X509* ca, uint64_t n) {
  const unsigned long hash =
      X509_NAME_hash_ex(X509_get_subject_name(ca), nullptr, nullptr, nullptr);
  return (std::filesystem::path(crl_dir) / fmt::format("{:08x}.r{}", hash, n)).string();
}

// The N of `ca`'s newest CRL: the last of the unbroken run from 0 (OpenSSL stops at a gap).
std::optional<uint64_t> NewestIndex(const std::string& crl_dir, const X509* ca) {
  std::optional<uint64_t> newest;
  for (uint64_t n = 0;; ++n) {
    std::error_code ec;
    if (!std::filesystem::exists(CrlPath(crl_dir, ca, n), ec)) return newest;
    newest = n;
  }
}

// A serial number in hex ("0x" first or colons between bytes allowed) as an ASN1_INTEGER.
StatusOr<IntegerPtr> ParseSerial(std::string_view text) {
  std::string hex;
  std::string_view rest = text;
  if (rest.substr(0, 2) == "0x" || rest.substr(0, 2) == "0X") rest.remove_prefix(2);
  for (char c : rest) {
    if (c == ':') continue;
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0 || hex.size() >= 64) {
      return InvalidArgumentError(fmt::format("'{}' is no serial number in hex", text));
    }
    hex += c;
  }
  if (hex.empty()) return InvalidArgumentError(fmt::format("'{}' is no serial number", text));
  BIGNUM* raw = nullptr;
  if (BN_hex2bn(&raw, hex.c_str()) == 0) {
    return InvalidArgumentError(fmt::format("'{}': {}", text, OpenSslError()));
  }
  BnPtr number(raw);
  IntegerPtr serial(BN_to_ASN1_INTEGER(number.get(), nullptr));
  if (serial == nullptr) return InternalError("serial: " + OpenSslError());
  return serial;
}

StatusOr<CrlPtr> ReadCrl(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFoundError(path + ": no such file");
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  CrlPtr crl(bio == nullptr ? nullptr
                            : PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr));
  if (crl == nullptr) {
    return InvalidArgumentError(fmt::format("{} holds no PEM CRL: {}", path, OpenSslError()));
  }
  return crl;
}

// OK when `ca` issued `crl`: its name and a valid signature.
Status CheckCrlIssuer(X509_CRL* crl, const X509* ca, const std::string& crl_path,
                      const std::string& ca_path) {
  if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca)) != 0 ||
      X509_CRL_verify(crl, X509_get0_pubkey(ca)) != 1) {
    ERR_clear_error();
    return FailedPreconditionError(fmt::format("{} (issuer '{}') is not a CRL signed by '{}' of {}",
                                               crl_path, CommonName(X509_CRL_get_issuer(crl)),
                                               CommonName(X509_get_subject_name(ca)), ca_path));
  }
  return OkStatus();
}

RevocationList Describe(X509_CRL* crl, const std::string& path) {
  RevocationList list;
  list.path = path;
  list.issuer_common_name = CommonName(X509_CRL_get_issuer(crl));
  IntegerPtr number(
      static_cast<ASN1_INTEGER*>(X509_CRL_get_ext_d2i(crl, NID_crl_number, nullptr, nullptr)));
  uint64_t value = 0;
  if (number != nullptr && ASN1_INTEGER_get_uint64(&value, number.get()) == 1) {
    list.number = value;
  }
  ERR_clear_error();
  list.last_update_unix = UnixTime(X509_CRL_get0_lastUpdate(crl));
  list.next_update_unix = UnixTime(X509_CRL_get0_nextUpdate(crl));
  STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl);
  for (int i = 0; revoked != nullptr && i < sk_X509_REVOKED_num(revoked); ++i) {
    const X509_REVOKED* entry = sk_X509_REVOKED_value(revoked, i);
    list.revoked.push_back({.serial_hex = HexOf(X509_REVOKED_get0_serialNumber(entry)),
                            .revoked_unix = UnixTime(X509_REVOKED_get0_revocationDate(entry))});
  }
  return list;
}

// Holds an exclusive flock on a directory while alive.
class DirectoryLock {
 public:
  static StatusOr<std::unique_ptr<DirectoryLock>> Acquire(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IoError(fmt::format("open {}: {}", dir, std::strerror(errno)));
    if (::flock(fd, LOCK_EX) != 0) {
      ::close(fd);
      return IoError(fmt::format("lock {}: {}", dir, std::strerror(errno)));
    }
    return std::unique_ptr<DirectoryLock>(new DirectoryLock(fd));
  }
  ~DirectoryLock() { ::close(fd_); }  // releases the lock
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  const int fd_;
};

Status EnsureDirectory(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return OkStatus();
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(fmt::format("create {}: {}", dir, ec.message()));
  return OkStatus();
}

// The serials to add: each certificate's (checked to be the CA's) and each parsed serial, by hex.
StatusOr<std::map<std::string, IntegerPtr>> NewSerials(const RevokeOptions& options, const Ca& ca) {
  std::map<std::string, IntegerPtr> serials;
  for (const auto& file : options.cert_files) {
    SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, internal::ReadCertificates(file));
    X509* cert = certs.front().get();
    if (X509_check_issued(ca.cert.get(), cert) != X509_V_OK ||
        X509_verify(cert, X509_get0_pubkey(ca.cert.get())) != 1) {
      ERR_clear_error();
      return FailedPreconditionError(
          fmt::format("{} was not issued by '{}' (its issuer is '{}'): only the CA that issued a "
                      "certificate revokes it",
                      file, CommonName(X509_get_subject_name(ca.cert.get())),
                      CommonName(X509_get_issuer_name(cert))));
    }
    IntegerPtr serial(ASN1_INTEGER_dup(X509_get0_serialNumber(cert)));
    if (serial == nullptr) return InternalError("serial: " + OpenSslError());
    std::string hex = HexOf(serial.get());
    serials.emplace(std::move(hex), std::move(serial));
  }
  for (const auto& text : options.serials) {
    SHOAL_ASSIGN_OR_RETURN(IntegerPtr serial, ParseSerial(text));
    std::string hex = HexOf(serial.get());
    serials.emplace(std::move(hex), std::move(serial));
  }
  if (serials.count(HexOf(X509_get0_serialNumber(ca.cert.get()))) != 0) {
    return FailedPreconditionError(
        "that is the CA's own serial: a CA is dropped by rotating it (docs/security.md)");
  }
  return serials;
}

Status AddRevoked(X509_CRL* crl, const ASN1_INTEGER* serial, const ASN1_TIME* when) {
  X509_REVOKED* entry = X509_REVOKED_new();
  if (entry == nullptr ||
      X509_REVOKED_set_serialNumber(entry, const_cast<ASN1_INTEGER*>(serial)) != 1 ||
      X509_REVOKED_set_revocationDate(entry, const_cast<ASN1_TIME*>(when)) != 1 ||
      X509_CRL_add0_revoked(crl, entry) != 1) {
    X509_REVOKED_free(entry);
    return InternalError("revoked entry: " + OpenSslError());
  }
  return OkStatus();
}

// The next CRL after `previous` (null: the first) with `serials` added, signed by `ca`.
StatusOr<CrlPtr> NextCrl(const Ca& ca, X509_CRL* previous,
                         const std::map<std::string, IntegerPtr>& serials, int lifetime_days) {
  CrlPtr crl(X509_CRL_new());
  if (crl == nullptr || X509_CRL_set_version(crl.get(), X509_CRL_VERSION_2) != 1 ||
      X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(ca.cert.get())) != 1) {
    return InternalError("new CRL: " + OpenSslError());
  }
  // lastUpdate strictly after the previous one's, so that OpenSSL takes this CRL as the newest.
  int64_t last_update = static_cast<int64_t>(std::time(nullptr)) - kBackdateSeconds;
  uint64_t number = 1;
  if (previous != nullptr) {
    last_update = std::max(last_update, UnixTime(X509_CRL_get0_lastUpdate(previous)) + 1);
    number = Describe(previous, "").number + 1;
  }
  TimePtr last(ASN1_TIME_set(nullptr, static_cast<time_t>(last_update)));
  TimePtr next(lifetime_days > 0 ? X509_time_adj_ex(nullptr, lifetime_days, 0, nullptr)
                                 : ASN1_TIME_dup(X509_get0_notAfter(ca.cert.get())));
  if (last == nullptr || next == nullptr || X509_CRL_set1_lastUpdate(crl.get(), last.get()) != 1 ||
      X509_CRL_set1_nextUpdate(crl.get(), next.get()) != 1) {
    return InternalError("CRL validity: " + OpenSslError());
  }
  std::set<std::string> present;
  STACK_OF(X509_REVOKED)* kept = previous != nullptr ? X509_CRL_get_REVOKED(previous) : nullptr;
  for (int i = 0; kept != nullptr && i < sk_X509_REVOKED_num(kept); ++i) {
    const X509_REVOKED* entry = sk_X509_REVOKED_value(kept, i);
    present.insert(HexOf(X509_REVOKED_get0_serialNumber(entry)));
    SHOAL_RETURN_IF_ERROR(AddRevoked(crl.get(), X509_REVOKED_get0_serialNumber(entry),
                                     X509_REVOKED_get0_revocationDate(entry)));
  }
  TimePtr now(ASN1_TIME_set(nullptr, std::time(nullptr)));
  if (now == nullptr) return InternalError("time: " + OpenSslError());
  for (const auto& [hex, serial] : serials) {
    if (present.count(hex) == 0)
      SHOAL_RETURN_IF_ERROR(AddRevoked(crl.get(), serial.get(), now.get()));
  }
  if (X509_CRL_sort(crl.get()) != 1) return InternalError("sort CRL: " + OpenSslError());
  IntegerPtr crl_number(ASN1_INTEGER_new());
  if (crl_number == nullptr || ASN1_INTEGER_set_uint64(crl_number.get(), number) != 1 ||
      X509_CRL_add1_ext_i2d(crl.get(), NID_crl_number, crl_number.get(), 0, 0) != 1) {
    return InternalError("CRL number: " + OpenSslError());
  }
  X509V3_CTX context;
  X509V3_set_ctx(&context, ca.cert.get(), nullptr, nullptr, crl.get(), 0);
  ExtensionPtr key_id(
      X509V3_EXT_conf_nid(nullptr, &context, NID_authority_key_identifier, "keyid:always"));
  if (key_id == nullptr || X509_CRL_add_ext(crl.get(), key_id.get(), -1) != 1) {
    return InternalError("CRL authority key id: " + OpenSslError());
  }
  if (X509_CRL_sign(crl.get(), ca.key.get(), EVP_sha256()) <= 0) {
    return InternalError("sign CRL: " + OpenSslError());
  }
  return crl;
}

StatusOr<std::string> CrlPem(X509_CRL* crl) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509_CRL(bio.get(), crl) != 1) {
    return InternalError("PEM CRL: " + OpenSslError());
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  if (size <= 0 || data == nullptr) return InternalError("PEM CRL: " + OpenSslError());
  return std::string(data, static_cast<size_t>(size));
}

// gRPC's rule (ssl_transport_security.cc): a certificate whose CA has no CRL is not revoked.
int IgnoreMissingCrl(int ok, X509_STORE_CTX* context) {
  if (X509_STORE_CTX_get_error(context) == X509_V_ERR_UNABLE_TO_GET_CRL) return 1;
  return ok;
}

}  // namespace

std::string DefaultCrlDir(std::string_view ca_cert_path) {
  return (std::filesystem::path(ca_cert_path).parent_path() / kCrlDirName).string();
}

StatusOr<RevocationList> Revoke(const RevokeOptions& options) {
  if (options.lifetime_days < 0 || options.lifetime_days > kMaxLifetimeDays) {
    return InvalidArgumentError(fmt::format("CRL lifetime must be 1 to {} days, not {}",
                                            kMaxLifetimeDays, options.lifetime_days));
  }
  const std::string ca_path = CaCertPath(options.certs_dir);
  const std::string crl_dir = options.crl_dir.empty() ? DefaultCrlDir(ca_path) : options.crl_dir;
  SHOAL_ASSIGN_OR_RETURN(Ca ca, internal::LoadCa(options.certs_dir, options.ca_key));
  SHOAL_ASSIGN_OR_RETURN(auto serials, NewSerials(options, ca));
  SHOAL_RETURN_IF_ERROR(EnsureDirectory(crl_dir));
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DirectoryLock> lock, DirectoryLock::Acquire(crl_dir));
  const std::optional<uint64_t> newest = NewestIndex(crl_dir, ca.cert.get());
  CrlPtr previous;
  if (newest.has_value()) {
    const std::string path = CrlPath(crl_dir, ca.cert.get(), *newest);
    SHOAL_ASSIGN_OR_RETURN(previous, ReadCrl(path));
    SHOAL_RETURN_IF_ERROR(CheckCrlIssuer(previous.get(), ca.cert.get(), path, ca_path));
  }
  SHOAL_ASSIGN_OR_RETURN(CrlPtr crl, NextCrl(ca, previous.get(), serials, options.lifetime_days));
  SHOAL_ASSIGN_OR_RETURN(std::string pem, CrlPem(crl.get()));
  const std::string path = CrlPath(crl_dir, ca.cert.get(), newest.has_value() ? *newest + 1 : 0);
  SHOAL_RETURN_IF_ERROR(internal::WriteFileAtomically(path, pem, 0644));
  return Describe(crl.get(), path);
}

StatusOr<RevocationList> ReadRevocationList(const std::string& ca_path,
                                            const std::string& crl_path) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, internal::ReadCertificates(ca_path));
  SHOAL_ASSIGN_OR_RETURN(CrlPtr crl, ReadCrl(crl_path));
  Status refused = OkStatus();
  for (const auto& ca : cas) {
    refused = CheckCrlIssuer(crl.get(), ca.get(), crl_path, ca_path);
    if (refused.ok()) return Describe(crl.get(), crl_path);
  }
  return refused;
}

StatusOr<std::vector<RevocationList>> ReadRevocationLists(const std::string& ca_path,
                                                          const std::string& crl_dir) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, internal::ReadCertificates(ca_path));
  std::vector<RevocationList> lists;
  for (const auto& ca : cas) {
    const std::optional<uint64_t> newest = NewestIndex(crl_dir, ca.get());
    if (!newest.has_value()) continue;
    SHOAL_ASSIGN_OR_RETURN(RevocationList list,
                           ReadRevocationList(ca_path, CrlPath(crl_dir, ca.get(), *newest)));
    lists.push_back(std::move(list));
  }
  return lists;
}

Status VerifyNotRevoked(const std::string& ca_path, const std::string& crl_dir,
                        const std::string& cert_path) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> roots, internal::ReadCertificates(ca_path));
  SHOAL_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, internal::ReadCertificates(cert_path));
  StorePtr store(X509_STORE_new());
  if (store == nullptr) return InternalError("X509_STORE_new: " + OpenSslError());
  for (const auto& root : roots) {
    if (X509_STORE_add_cert(store.get(), root.get()) != 1) {
      return InternalError("trust " + ca_path + ": " + OpenSslError());
    }
  }
  // The same lookup and flags as gRPC's handshakes.
  if (X509_STORE_load_locations(store.get(), nullptr, crl_dir.c_str()) != 1 ||
      X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL) != 1) {
    return InternalError("CRL directory " + crl_dir + ": " + OpenSslError());
  }
  X509_STORE_set_verify_cb(store.get(), &IgnoreMissingCrl);
  StoreContextPtr context(X509_STORE_CTX_new());
  if (context == nullptr ||
      X509_STORE_CTX_init(context.get(), store.get(), certs.front().get(), nullptr) != 1) {
    return InternalError("X509_STORE_CTX_init: " + OpenSslError());
  }
  if (X509_verify_cert(context.get()) == 1) return OkStatus();
  const int error = X509_STORE_CTX_get_error(context.get());
  ERR_clear_error();
  if (error == X509_V_ERR_CERT_REVOKED) {
    return UnauthenticatedError(fmt::format(
        "{} (serial {}) is revoked by a CRL in {}: issue a new certificate for its holder",
        cert_path, HexOf(X509_get0_serialNumber(certs.front().get())), crl_dir));
  }
  return UnauthenticatedError(fmt::format("{} is not trusted by {} with the CRLs of {}: {}",
                                          cert_path, ca_path, crl_dir,
                                          X509_verify_cert_error_string(error)));
}

}  // namespace shoal::security
