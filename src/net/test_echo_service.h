#pragma once

// EchoService: a transport::Service for the gRPC runtime's tests (grpc_runtime_test.cc,
// grpc_pipe_test.cc). A write answers with its body's length as the version, or (primary key
// "big-reply") with a document of twice its body's size; a Get sleeps 2 s on the runtime's
// clock; anything else is refused with NOT_SERVING. Thread-safe.

#include <atomic>
#include <string>
#include <utility>
#include <variant>

#include "src/transport/runtime.h"

namespace shoal::net {

class EchoService final : public transport::Service {
 public:
  explicit EchoService(transport::Runtime& runtime) : runtime_(runtime) {}
  transport::Response Handle(const transport::Address& from,
                             const transport::Request& request) override {
    last_from = from;
    if (const auto* write = std::get_if<transport::WriteRequest>(&request)) {
      if (write->primary_key == "big-reply") {
        transport::ScanResponse scan;
        scan.documents.push_back(storage::Document{.collection = CollectionId(1),
                                                   .primary_key = "k",
                                                   .body = std::string(write->body.size() * 2, 'x'),
                                                   .version = 1,
                                                   .tombstone = false});
        return transport::Response::Ok(std::move(scan));
      }
      return transport::Response::Ok(transport::WriteResponse{.version = write->body.size()});
    }
    if (std::holds_alternative<transport::GetRequest>(request)) {
      ++sleeping;
      (void)runtime_.Sleep(2'000'000);
      --sleeping;
      return transport::Response::Ok();
    }
    return transport::Response::Error(
        transport::MakeClusterError(transport::ClusterError::kNotServing, "not yet"));
  }
  std::atomic<transport::Address> last_from{transport::Address::Client(99)};
  std::atomic<int> sleeping{0};  // Get handlers now sleeping

 private:
  transport::Runtime& runtime_;
};

}  // namespace shoal::net
