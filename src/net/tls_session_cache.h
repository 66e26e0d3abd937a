#pragma once

// Client caches of TLS sessions (gRPC's LRU cache of OpenSSL sessions: TLS 1.3 tickets), so that
// a new connection to a server the same credentials connected to before resumes the session
// instead of making a full handshake (docs/security.md, "Session resumption").
//
// A resumed session carries the client certificate of the full handshake that began it, and
// gRPC 1.51 keys its cache by the host dialled, without the port. So the caches are
// TlsSessionCaches, owned by one TlsCredentials (one identity, of the runtimes that hold it), one
// cache per server address (host:port) that every channel of those credentials to it shares. A
// cache shared by two identities would resume one's session for the other (a user's channel served
// as the node that made the handshake), and one shared by two servers of a host would offer
// each the other's ticket. A ticket resumes only at the server process that issued it: a
// restarted server, or one that reloaded its certificate, answers with a full handshake.

#include <absl/base/thread_annotations.h>
#include <absl/synchronization/mutex.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>

struct grpc_ssl_session_cache;

namespace grpc {
class ChannelArguments;
}  // namespace grpc

namespace shoal::net {

// Server addresses whose sessions one TlsSessionCaches keeps (one session each: the latest
// ticket). Beyond it they are all forgotten at once (channels keep theirs).
inline constexpr size_t kTlsSessionCacheAddresses = 1024;

// One gRPC session cache. Thread-safety: immutable after construction; gRPC locks the cache,
// and every channel holds its own reference to it, so a channel may outlive the wrapper.
class TlsSessionCache {
 public:
  explicit TlsSessionCache(size_t capacity);
  ~TlsSessionCache();
  TlsSessionCache(const TlsSessionCache&) = delete;
  TlsSessionCache& operator=(const TlsSessionCache&) = delete;

  // Channels created with `args` look up and store their sessions here.
  void AddTo(grpc::ChannelArguments& args) const;

 private:
  grpc_ssl_session_cache* const cache_;
};

// The caches of one identity, one per server address. Thread-safe.
class TlsSessionCaches {
 public:
  // The cache of channels to `host_port`, made at the first call for it.
  [[nodiscard]] std::shared_ptr<const TlsSessionCache> For(const std::string& host_port)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const TlsSessionCache>> caches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::net
