// GrpcRuntime's address book (grpc_runtime.h, "Addresses"): who serves where, kept in a file at
// the coordinator across restarts, and served by Shoal.Resolve; and the server mode's parser.

#include <fmt/format.h>
#include <grpcpp/support/status.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "proto/shoal.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

using transport::Address;

StatusOr<GrpcServerMode> ParseGrpcServerMode(std::string_view text) {
  if (text == "sync") return GrpcServerMode::kSync;
  if (text == "callback") return GrpcServerMode::kCallback;
  return InvalidArgumentError(
      fmt::format("unknown gRPC server mode '{}' (sync or callback)", std::string(text)));
}

void GrpcRuntime::SetAddress(const Address& who, const std::string& host_port) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = book_.try_emplace(who, host_port);
  if (!inserted) {
    if (it->second == host_port) return;
    it->second = host_port;
  }
  SaveAddressBookLocked();
}

bool GrpcRuntime::KnowsAddress(const Address& who) const {
  absl::MutexLock lock(&mu_);
  return book_.contains(who);
}

std::map<Address, std::string> GrpcRuntime::AddressBook() const {
  absl::MutexLock lock(&mu_);
  return book_;
}

void GrpcRuntime::Forget(const Address& who) {
  // The coordinator's book is the source of truth: it changes only when a process announces a
  // new address. Elsewhere a refused address may be stale: resolve it again next time.
  if (options_.coordinator.empty() || who.kind == Address::Kind::kCoordinator) return;
  absl::MutexLock lock(&mu_);
  book_.erase(who);
}

void GrpcRuntime::LoadAddressBook() {
  if (options_.address_book_path.empty()) return;
  std::ifstream in(options_.address_book_path);
  std::string line;
  absl::MutexLock lock(&mu_);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    unsigned kind = 0;
    uint32_t id = 0;
    std::string host_port;
    if (!(fields >> kind >> id >> host_port) || kind > 2) continue;  // a torn line: skip it
    book_[Address{static_cast<Address::Kind>(kind), id}] = host_port;
  }
}

void GrpcRuntime::SaveAddressBookLocked() const {
  if (options_.address_book_path.empty()) return;
  // Write a new file and rename it over the old one, so a crash leaves one whole book.
  const std::string tmp = options_.address_book_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [who, host_port] : book_) {
      out << static_cast<unsigned>(who.kind) << ' ' << who.id << ' ' << host_port << '\n';
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, options_.address_book_path, ec);
  // A failed save only costs a re-announcement after a restart: nodes heartbeat continuously.
  (void)ec;
}

grpc::Status GrpcRuntime::HandleResolve(wire::ResolveResponse* out) const {
  // A standby's book may be incomplete or stale: the caller asks the leader instead.
  if (grpc::Status standby = StandbyStatus(); !standby.ok()) return standby;
  for (const auto& [who, host_port] : AddressBook()) {
    auto* entry = out->add_entries();
    ToWire(who, entry->mutable_address());
    entry->set_host_port(host_port);
  }
  return grpc::Status::OK;
}

}  // namespace shoal::net
