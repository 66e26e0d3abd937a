#include "src/net/tls_session_cache.h"

#include <grpc/grpc_security.h>
#include <grpcpp/support/channel_arguments.h>

namespace shoal::net {

TlsSessionCache::TlsSessionCache(size_t capacity)
    : cache_(grpc_ssl_session_cache_create_lru(capacity)) {}

// Drops this wrapper's reference; gRPC frees the cache once no channel holds one either.
TlsSessionCache::~TlsSessionCache() { grpc_ssl_session_cache_destroy(cache_); }

void TlsSessionCache::AddTo(grpc::ChannelArguments& args) const {
  // The argument's vtable takes a reference for every copy of the channel's arguments.
  const grpc_arg arg = grpc_ssl_session_cache_create_channel_arg(cache_);
  args.SetPointerWithVtable(arg.key, arg.value.pointer.p, arg.value.pointer.vtable);
}

std::shared_ptr<const TlsSessionCache> TlsSessionCaches::For(const std::string& host_port) {
  absl::MutexLock lock(&mu_);
  if (auto it = caches_.find(host_port); it != caches_.end()) return it->second;
  if (caches_.size() >= kTlsSessionCacheAddresses) caches_.clear();
  // One session: gRPC keys it by the host, the same for every channel to this address.
  auto cache = std::make_shared<const TlsSessionCache>(1);
  caches_.emplace(host_port, cache);
  return cache;
}

}  // namespace shoal::net
