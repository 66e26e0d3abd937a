#include "src/transport/runtime.h"

#include <fmt/format.h>

#include <utility>

namespace shoal::transport {

Status Runtime::StreamScan(const Address& to, ScanRequest request, Micros timeout,
                           const std::function<Status(Response)>& on_page) {
  const Micros deadline = Now() + timeout;
  while (true) {
    const Micros left = deadline - Now();
    if (left <= 0) {
      return DeadlineExceededError(
          fmt::format("scan stream to {}: deadline passed", to.DebugString()));
    }
    SHOAL_ASSIGN_OR_RETURN(Response response, Call(to, request, left));
    if (!response.status.ok()) return on_page(std::move(response));
    auto* page = std::get_if<ScanResponse>(&response.body);
    if (page == nullptr) {
      return InternalError(fmt::format("scan stream to {}: not a scan page", to.DebugString()));
    }
    std::string next = page->next_cursor;
    SHOAL_RETURN_IF_ERROR(on_page(std::move(response)));
    if (next.empty()) return OkStatus();
    request.cursor = std::move(next);
  }
}

void Runtime::CallAsync(const Address& to, Request request, Micros timeout, CallDone done) {
  Spawn(Self(), fmt::format("call-async-{}", to.DebugString()),
        [this, to, request = std::move(request), timeout, done = std::move(done)]() mutable {
          done(Call(to, std::move(request), timeout));
        });
}

}  // namespace shoal::transport
