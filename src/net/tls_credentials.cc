#include "src/net/tls_credentials.h"

#include <fmt/format.h>
#include <grpc/grpc_security_constants.h>
#include <grpcpp/client_context.h>
#include <grpcpp/security/auth_context.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/status.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/shoal.pb.h"
#include "src/net/request_roles.h"
#include "src/net/tls_session_cache.h"
#include "src/security/certificates.h"

namespace shoal::net {
namespace {

StatusOr<std::string> ReadPem(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return InvalidArgumentError(fmt::format("read {} failed", path));
  return text;
}

}  // namespace

TlsCredentials::TlsCredentials() = default;
TlsCredentials::~TlsCredentials() = default;

StatusOr<std::shared_ptr<const TlsCredentials>> TlsCredentials::Create(
    const TransportSecurity& security) {
  if (!security.tls.has_value()) {
    std::shared_ptr<TlsCredentials> credentials(new TlsCredentials());
    credentials->channel_ = grpc::InsecureChannelCredentials();
    return std::shared_ptr<const TlsCredentials>(std::move(credentials));
  }
  SHOAL_RETURN_IF_ERROR(security::CheckTlsFiles(*security.tls));
  return Make(security);
}

StatusOr<std::shared_ptr<const TlsCredentials>> TlsCredentials::Make(
    const TransportSecurity& security) {
  if (security.reload_seconds == 0) return InvalidArgumentError("reload_seconds must be >= 1");
  std::shared_ptr<TlsCredentials> credentials(new TlsCredentials());
  const security::TlsFiles& files = *security.tls;
  credentials->crl_dir_ = security::CrlDirOf(files);
  credentials->revocations_ = std::make_unique<security::RevocationCache>(
      security::RevocationCacheOptions{.ca_path = files.ca_cert, .crl_dir = credentials->crl_dir_});
  if (security.resume_sessions) {
    // Read once and never again: a reload would free the handshaker factory that connections
    // of the old TLS context still call with their session tickets (the header's "Limits").
    SHOAL_ASSIGN_OR_RETURN(std::string key, ReadPem(files.key));
    SHOAL_ASSIGN_OR_RETURN(std::string cert, ReadPem(files.cert));
    SHOAL_ASSIGN_OR_RETURN(std::string ca, ReadPem(files.ca_cert));
    credentials->provider_ = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
        std::move(ca), std::vector<grpc::experimental::IdentityKeyCertPair>{
                           {.private_key = std::move(key), .certificate_chain = std::move(cert)}});
    credentials->sessions_ = std::make_unique<TlsSessionCaches>();
  } else {
    credentials->provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        files.key, files.cert, files.ca_cert, security.reload_seconds);
  }
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(credentials->provider_);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  // The server's certificate must name the host dialled (gRPC's own check of the target name
  // against the subject alternative names).
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  options.set_check_call_host(true);
  options.set_crl_directory(credentials->crl_dir_);
  credentials->channel_ = grpc::experimental::TlsCredentials(options);
  if (credentials->channel_ == nullptr) {
    return InternalError("gRPC refused the TLS channel credentials");
  }
  if (!files.user.empty()) {
    credentials->login_user_ = files.user;
    credentials->login_password_ = files.password;
  }
  return std::shared_ptr<const TlsCredentials>(std::move(credentials));
}

StatusOr<std::shared_ptr<const TlsCredentials>> TlsCredentials::Shared(
    const TransportSecurity& security) {
  if (!security.tls.has_value()) return Create(security);  // gRPC shares insecure ones itself
  const security::TlsFiles& files = *security.tls;
  SHOAL_RETURN_IF_ERROR(security::CheckTlsFiles(files));
  // Every field that makes the credentials; the server's authentication limits are not theirs.
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string,
                         std::string, uint32_t, bool>;
  Key key{files.ca_cert,
          files.cert,
          files.key,
          files.user,
          files.password,
          security::CrlDirOf(files),
          security.reload_seconds,
          security.resume_sessions};
  // The live credentials by key, guarded by `mu`; never destroyed (a process-wide registry).
  static absl::Mutex mu(absl::kConstInit);
  static auto* live = new std::map<Key, std::weak_ptr<const TlsCredentials>>();
  absl::MutexLock lock(&mu);
  std::erase_if(*live, [](const auto& entry) { return entry.second.expired(); });
  if (auto it = live->find(key); it != live->end()) {
    if (auto held = it->second.lock()) return held;
  }
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<const TlsCredentials> made, Make(security));
  (*live)[std::move(key)] = made;
  return made;
}

std::shared_ptr<grpc::ServerCredentials> TlsCredentials::Server() const {
  if (provider_ == nullptr) return grpc::InsecureServerCredentials();
  grpc::experimental::TlsServerCredentialsOptions options(provider_);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.set_crl_directory(crl_dir_);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> TlsCredentials::Channel() const { return channel_; }

void TlsCredentials::AddLogin(grpc::ClientContext* context) const {
  if (login_user_.empty()) return;
  context->AddMetadata(std::string(kUserMetadataKey), login_user_);
  context->AddMetadata(std::string(kPasswordMetadataKey), login_password_);
}

void TlsCredentials::ConfigureChannel(const std::string& host_port,
                                      grpc::ChannelArguments& args) const {
  if (sessions_ != nullptr) sessions_->For(host_port)->AddTo(args);
}

grpc::Status TlsCredentials::CheckNotRevoked(const grpc::AuthContext& context) const {
  if (revocations_ == nullptr) return grpc::Status::OK;
  const auto pem = context.FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pem.empty()) return grpc::Status::OK;
  const Status checked =
      revocations_->Check(std::string_view(pem.front().data(), pem.front().size()));
  if (checked.ok()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(MessageOf(checked)));
}

namespace {

constexpr std::string_view kHandshakeHint =
    "TLS handshake failed: the client and the server need certificates of the same cluster CA, "
    "not revoked, and the server's must name the host dialled (docs/security.md)";

}  // namespace

std::string SecurityHint(std::string_view grpc_message) {
  if (grpc_message.find("andshake failed") != std::string_view::npos ||
      grpc_message.find("andshake read failed") != std::string_view::npos) {
    return std::string(kHandshakeHint);
  }
  // Only a connection that never carried a call: one that did and then closed is a server that
  // stopped or restarted, which the caller's message says ("the connection broke").
  if (grpc_message.find("Socket closed") != std::string_view::npos &&
      grpc_message.find("failed to connect") != std::string_view::npos) {
    return "the server closed the connection at once: it refuses this client's certificate "
           "(of another CA, or revoked), or it requires TLS and this client has none (give it "
           "--certs-dir or credentials instead of --insecure) (docs/security.md)";
  }
  return {};
}

bool HandshakeFailed(const Status& status) {
  return MessageOf(status).find(kHandshakeHint) != std::string_view::npos;
}

std::string PeerCommonName(const grpc::AuthContext& context) {
  const auto values = context.FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  if (values.empty()) return {};
  return std::string(values.front().data(), values.front().size());
}

grpc::Status CheckClusterSender(const wire::Envelope& envelope, std::string_view peer) {
  if (peer == security::kNodeCommonName) return grpc::Status::OK;
  const bool claims_process = envelope.from().kind() != wire::Address::CLIENT;
  if (!claims_process && !AccessOf(envelope.request()).cluster_only) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::PERMISSION_DENIED,
      fmt::format("only cluster processes (with a node certificate) send {}; this connection's "
                  "certificate names '{}'",
                  claims_process ? "as a node or coordinator" : "this request", peer));
}

}  // namespace shoal::net
