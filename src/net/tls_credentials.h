#pragma once

// The one place where a GrpcRuntime's server and channel credentials are made
// (docs/security.md, "TLS").
//
// With TLS files (TransportSecurity::tls), every connection is mutual TLS through gRPC's TLS
// credentials (OpenSSL underneath):
//   - the server presents its certificate, and requires and verifies a client certificate that
//     chains to the CA bundle: a peer without one fails the handshake, before any request;
//   - a channel presents this process's certificate, verifies the server's against the CA bundle
//     and checks that it names the host dialled (a DNS or IP subject alternative name);
//   - a client's user and password (TlsFiles::user, ::password), when given, ride as call
//     metadata on every call of every channel (gRPC call credentials composed with the TLS
//     ones, which gRPC sends only over a secure channel);
//   - both sides check the peer's certificate against the CRLs of security::CrlDirOf(files)
//     (security/revocation.h): a revoked certificate fails the handshake, as a client and as a
//     server. OpenSSL reads a CRL file the runtime has not read yet at the next handshake, so a
//     revocation counts for new connections without a restart; a CA without a CRL revokes
//     nothing (gRPC ignores "unable to get CRL");
//   - a server also checks the peer certificate of every call against those CRLs, and a client
//     the server certificate of every answer (CheckNotRevoked, security::RevocationCache; the
//     client's half is CheckServer, grpc_runtime_internal.h): a connection opened before a
//     revocation is refused from its first call after the CRL directory is read again (at most
//     every security::kDefaultCrlRereadInterval);
//   - one FileWatcherCertificateProvider per TlsCredentials reads the three files again every
//     reload_seconds: a replaced certificate, key or CA bundle is used by new connections
//     without a restart; connections already open keep the identity they were made with
//     (not with resume_sessions, below);
//   - with resume_sessions (off by default), the channels of one TlsCredentials (of every
//     runtime that holds it) to one server address share a TLS session cache
//     (tls_session_cache.h, ConfigureChannel), so a new connection to a server they connected
//     to before resumes the session: no certificate is sent or verified again, neither by the
//     client nor by the server, and the CRLs are not consulted (docs/security.md, "Session
//     resumption"). Never across two TlsCredentials: a session carries the identity of the
//     handshake that began it. Such credentials read their files once, without reloading.
// Without them (--insecure) both are gRPC's insecure credentials: plaintext, no peer identity.
//
// Limits of gRPC 1.51's experimental TLS API, as built on: the watcher reads key and certificate
// one after the other with no check that they match, so a reload that falls between the two
// renames of a rotation (microseconds apart) serves a mismatched pair, refusing handshakes, until
// the next reload; servers issue session tickets with a key of their own memory (no option sets
// or disables it), so a ticket resumes only at the server instance that issued it; a reload
// frees the client's handshaker factory while connections of the old TLS context may still get
// session tickets, and with a session cache each ticket calls into that factory (a crash in
// SslSessionLRUCache::Put), so credentials that resume sessions never reload.
//
// Thread-safety: TlsCredentials is immutable after Create; its methods are thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/common/status.h"
#include "src/security/authenticator.h"
#include "src/security/revocation_cache.h"
#include "src/security/tls_files.h"

namespace grpc {
class AuthContext;
class Status;
class ChannelArguments;
class ChannelCredentials;
class ClientContext;
class ServerCredentials;
namespace experimental {
class CertificateProviderInterface;
}  // namespace experimental
}  // namespace grpc

namespace shoal::wire {
class Envelope;
}  // namespace shoal::wire

namespace shoal::net {

class TlsSessionCaches;

inline constexpr uint32_t kDefaultCertReloadSeconds = 10;
// The call metadata that carries a client's user and password (TlsFiles::user, ::password):
// attached to every call of a channel by TlsCredentials, read by the server's authorization
// (GrpcRuntime). Only ever sent over TLS.
inline constexpr std::string_view kUserMetadataKey = "shoal-user";
inline constexpr std::string_view kPasswordMetadataKey = "shoal-password";

struct TransportSecurity {
  // This process's identity and the CA bundle it trusts; nullopt: plaintext (--insecure).
  std::optional<security::TlsFiles> tls = std::nullopt;
  // How often the files are read again (rotation without a restart), >= 1; checked but unused
  // with resume_sessions.
  uint32_t reload_seconds = kDefaultCertReloadSeconds;
  // A server's limits on password guessing (docs/security.md, "Password guessing"); a process
  // that serves nothing ignores them.
  security::AuthenticatorOptions authentication{};
  // Whether channels resume TLS sessions of earlier connections of the same TlsCredentials. Such
  // credentials read their files once and never reload them (the header's "Limits"), so no
  // Shoal process turns it on: they all reload; a client whose certificate does not change while
  // it runs may.
  bool resume_sessions = false;
};

class TlsCredentials {
 public:
  // Checks the files (security::CheckTlsFiles: a clear error at start, e.g. a key that is not
  // the certificate's or a certificate of another CA) and starts watching them.
  [[nodiscard]] static StatusOr<std::shared_ptr<const TlsCredentials>> Create(
      const TransportSecurity& security);
  // Create, but the credentials of equal TLS settings (files, user and password, reload period,
  // resumption) stay one object for as long as any runtime of the process holds them: gRPC
  // then lets the channels of all those runtimes to one server share one connection (its
  // subchannel pool keys a connection by its credentials object and channel arguments), as it
  // does without TLS. Sixteen Databases of one process with the same identity hold one TLS
  // connection per node, not sixteen (docs/results/security.md). The files are checked on every
  // call, so a Connect with an identity revoked since still fails at once.
  [[nodiscard]] static StatusOr<std::shared_ptr<const TlsCredentials>> Shared(
      const TransportSecurity& security);
  ~TlsCredentials();

  [[nodiscard]] bool secure() const { return provider_ != nullptr; }
  [[nodiscard]] std::shared_ptr<grpc::ServerCredentials> Server() const;
  [[nodiscard]] std::shared_ptr<grpc::ChannelCredentials> Channel() const;
  // Adds to `args` what a channel with Channel() to `host_port` needs besides: with TLS and
  // resume_sessions, these credentials' TLS session cache for that address.
  void ConfigureChannel(const std::string& host_port, grpc::ChannelArguments& args) const;
  // Adds the user and password of a client that signs in by password to the metadata of the
  // call of `context` (nothing otherwise; only with TLS). Per call rather than a gRPC metadata
  // plugin: gRPC 1.51's plugin wrapper holds the default event engine, whose release at the
  // end of a process could wait a second for a thread its pool was starting (a one-shot
  // `shoal get` took 1.06 s instead of 0.06 about one run in five).
  void AddLogin(grpc::ClientContext* context) const;
  // OK unless the peer certificate of `context` (a server call's) is revoked by the CRLs:
  // UNAUTHENTICATED naming its serial then. OK without TLS or without a peer certificate.
  [[nodiscard]] grpc::Status CheckNotRevoked(const grpc::AuthContext& context) const;

 private:
  TlsCredentials();
  // Create with TLS files already checked.
  [[nodiscard]] static StatusOr<std::shared_ptr<const TlsCredentials>> Make(
      const TransportSecurity& security);

  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider_;
  std::shared_ptr<grpc::ChannelCredentials> channel_;
  std::string crl_dir_;  // security::CrlDirOf(the files)
  // A client that signs in by password (AddLogin); empty otherwise.
  std::string login_user_;
  std::string login_password_;
  // With TLS and resume_sessions; destroyed after the runtime's channels (which hold their own
  // references to the caches anyway).
  std::unique_ptr<TlsSessionCaches> sessions_;
  // The per-call check of CheckNotRevoked (internally synchronized); null without TLS.
  std::unique_ptr<security::RevocationCache> revocations_;
};

// What a failed connection's gRPC message says about security, for the operator: a TLS
// handshake that failed (certificates of different CAs, or a server certificate that does not
// name the host dialled), or a server that closed a connection before it carried a call (a
// client certificate it refuses, of another CA or revoked, which TLS 1.3 reports to the client
// so, or a plaintext client at a TLS server). "" for anything else, such as a connection closed
// during a call by a server that stopped.
[[nodiscard]] std::string SecurityHint(std::string_view grpc_message);
// Whether `status` failed a TLS handshake (its message carries SecurityHint's first kind): no
// retry will fix it until the certificates change.
[[nodiscard]] bool HandshakeFailed(const Status& status);

// Cluster membership over TLS (docs/security.md): an envelope from a node or coordinator, or
// carrying a request only cluster processes send (map installs, heartbeats, every step of a
// bucket move, replication), must come over a connection whose client certificate is a node's:
// its common name is security::kNodeCommonName, and the CA vouched for it in the handshake.
// `peer` is that common name ("" when unknown). PERMISSION_DENIED (certainly not handled) when
// refused.
[[nodiscard]] grpc::Status CheckClusterSender(const wire::Envelope& envelope,
                                              std::string_view peer);

// The common name of the verified client certificate of a call ("" without TLS): "node" for a
// cluster process, the user's name for a client (security/certificates.h). For authorization.
[[nodiscard]] std::string PeerCommonName(const grpc::AuthContext& context);

}  // namespace shoal::net
