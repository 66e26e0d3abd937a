#pragma once

// Client caches of TLS sessions (gRPC's LRU cache of OpenSSL sessions: TLS 1.3 tickets), so that
// a new connection to a server this process has connected to before resumes the session
// instead of making a full handshake (docs/security.md, "Session resumption").
//
// gRPC 1.51 keys its cache by the host dialled without the port, so one cache shared by
// channels to two servers of one host (a coordinator and nodes on 127.0.0.1) would hold one
// session for both, and each would be offered the other's ticket: a full handshake every time.
// So the process keeps one cache per server address (host:port), shared by every channel to
// that address (TlsSessionCaches). A ticket resumes only at the server process that issued it:
// a restarted server, or one that reloaded its certificate, answers with a full handshake.

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

// Server addresses whose sessions the process keeps (one session each: the latest ticket).
// Beyond it the process forgets them all and starts afresh (channels keep theirs).
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

// The process's caches, one per server address. Thread-safe.
class TlsSessionCaches {
 public:
  // The process's one instance, made at the first use and destroyed at exit, after every
  // runtime and its channels.
  [[nodiscard]] static TlsSessionCaches& OfProcess();

  // The cache of channels to `host_port`, made at the first call for it.
  [[nodiscard]] std::shared_ptr<const TlsSessionCache> For(const std::string& host_port)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const TlsSessionCache>> caches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::net
