// Client's asynchronous operations (client.h): the first attempt through the Pipeline, the rest
// through the synchronous path on a task.

#include <utility>

#include "src/client/client.h"
#include "src/common/point.h"

namespace shoal::client {

using transport::Request;
using transport::Response;

Client::~Client() { WaitAsync(); }

transport::Address Client::BeginAsync() {
  absl::MutexLock lock(&async_mu_);
  ++async_outstanding_;
  if (!self_.has_value()) self_ = runtime_.Self();
  return *self_;
}

void Client::RunAsync(std::function<void()> fn) {
  const transport::Address self = BeginAsync();
  runtime_.Spawn(self, "client-async", [this, fn = std::move(fn)] {
    fn();
    EndAsync();
  });
}

void Client::EndAsync() {
  absl::MutexLock lock(&async_mu_);
  if (--async_outstanding_ == 0) async_idle_.SignalAll();
}

void Client::WaitAsync() {
  absl::MutexLock lock(&async_mu_);
  while (async_outstanding_ != 0) async_idle_.Wait(&async_mu_);
}

void Client::CallOwnerAsync(Point point, std::function<Request(MapEpoch)> make_request,
                            bool idempotent, std::function<void(StatusOr<Response>)> done) {
  cluster::ShardMapPtr map;
  {
    absl::MutexLock lock(&mu_);
    map = map_;
  }
  (void)BeginAsync();
  // CallOwner from the start, on a task: it may fetch the map, back off and retry.
  auto retry = [this, point, make_request, idempotent, done] {
    {
      absl::MutexLock lock(&mu_);
      ++counters_.async_retried;
    }
    RunAsync([this, point, make_request, idempotent, done] {
      done(CallOwner(point, make_request, idempotent));
    });
    EndAsync();
  };
  if (map == nullptr) {
    retry();
    return;
  }
  pipeline_->Submit(OwnerOf(map->Lookup(point)), make_request(map->epoch()), options_.call_timeout,
                    [this, idempotent, done, retry](StatusOr<Response> response) {
                      const Attempt judged = Judge(response, idempotent);
                      switch (judged.action) {
                        case transport::RetryAction::kDone:
                          done(std::move(response));
                          EndAsync();
                          return;
                        case transport::RetryAction::kUnknownOutcome:
                        case transport::RetryAction::kGiveUp:
                          done(judged.error);
                          EndAsync();
                          return;
                        case transport::RetryAction::kLearnRoute: {
                          absl::MutexLock lock(&mu_);
                          ++counters_.wrong_shard;
                        }
                          // Adopting a newer route never waits; CallOwner learns it otherwise.
                          (void)Adopt(response->route);
                          retry();
                          return;
                        case transport::RetryAction::kResend:
                        case transport::RetryAction::kBackOff:
                          retry();  // CallOwner refreshes and backs off as it needs
                          return;
                      }
                    });
}

void Client::WriteAsync(transport::WriteRequest request, WriteDone done) {
  const Point point = PointOf(request.collection, request.primary_key);
  auto shared = std::make_shared<const transport::WriteRequest>(std::move(request));
  CallOwnerAsync(
      point,
      [shared](MapEpoch epoch) -> Request {
        transport::WriteRequest write = *shared;
        write.epoch = epoch;
        return write;
      },
      /*idempotent=*/false,
      [done = std::move(done)](StatusOr<Response> response) {
        if (!response.ok()) return done(response.status());
        auto body = transport::BodyAs<transport::WriteResponse>(std::move(*response));
        if (!body.ok()) return done(body.status());
        done(body->version);
      });
}

void Client::GetAsync(CollectionId c, std::string pk, GetDone done) {
  const Point point = PointOf(c, pk);
  CallOwnerAsync(
      point,
      [c, pk = std::move(pk)](MapEpoch epoch) -> Request {
        return transport::GetRequest{.epoch = epoch, .collection = c, .primary_key = pk};
      },
      /*idempotent=*/true,
      [done = std::move(done)](StatusOr<Response> response) {
        if (!response.ok()) return done(response.status());
        auto body = transport::BodyAs<transport::GetResponse>(std::move(*response));
        if (!body.ok()) return done(body.status());
        done(std::move(body->document));
      });
}

}  // namespace shoal::client
