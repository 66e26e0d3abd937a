// Streamed scans over GrpcRuntime (Shoal.Scan, grpc_runtime.h "Streams") against a scan service
// of numbered documents, in both server modes: pages in order, an error page ends the stream,
// each stream limit at its value and one past, early cancellation with bounded read-ahead.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "src/net/grpc_runtime.h"

namespace shoal::net {
namespace {

using transport::Address;
using transport::Micros;

// Generous: under a sanitizer on a loaded machine, a first connection can take seconds.
constexpr Micros kTimeout = 60'000'000;
const Address kNode = Address::Node(NodeId(1));

std::string Key(uint32_t i) { return fmt::format("k{:05}", i); }

// Answers ScanRequests over documents 0..size-1 (key Key(i), a body of body_bytes): the cursor
// is the next index in decimal; a page honours max_documents and max_bytes as a node does.
class NumberedScanService : public transport::Service {
 public:
  NumberedScanService(transport::Runtime& runtime, uint32_t size, size_t body_bytes)
      : runtime_(runtime), size_(size), body_(body_bytes, 'x') {}

  transport::Response Handle(const Address&, const transport::Request& request) override {
    const auto* scan = std::get_if<transport::ScanRequest>(&request);
    if (scan == nullptr) return transport::Response::Error(InvalidArgumentError("not a scan"));
    ++pages;
    max_bytes_seen = scan->max_bytes;
    ++waiting;
    while (!open) {
      if (!runtime_.Sleep(1'000).ok()) {
        --waiting;
        return transport::Response::Error(CancelledError("stopped"));
      }
    }
    --waiting;
    if (page_micros > 0) (void)runtime_.Sleep(page_micros);
    uint32_t next = scan->cursor.empty() ? 0 : static_cast<uint32_t>(std::stoul(scan->cursor));
    if (next >= wrong_shard_at) {
      return transport::Response::Error(
          transport::MakeClusterError(transport::ClusterError::kWrongShard, "moved"));
    }
    transport::ScanResponse page;
    size_t bytes = 0;
    while (next < size_ && page.documents.size() < scan->max_documents) {
      const size_t document_bytes = Key(next).size() + body_.size();
      if (!page.documents.empty() && scan->max_bytes != 0 &&
          bytes + document_bytes > scan->max_bytes) {
        break;
      }
      bytes += document_bytes;
      page.documents.push_back(storage::Document{.collection = CollectionId(1),
                                                 .primary_key = Key(next),
                                                 .body = body_,
                                                 .version = 1,
                                                 .tombstone = false});
      ++next;
    }
    if (next < size_) page.next_cursor = std::to_string(next);
    return transport::Response::Ok(std::move(page));
  }

  std::atomic<int> pages{0};                // handled so far
  std::atomic<uint32_t> max_bytes_seen{0};  // of the last request
  std::atomic<bool> open{true};             // false: pages wait (counted by `waiting`)
  std::atomic<int> waiting{0};
  std::atomic<Micros> page_micros{0};  // each page takes this long
  std::atomic<uint32_t> wrong_shard_at{UINT32_MAX};

 private:
  transport::Runtime& runtime_;
  const uint32_t size_;
  const std::string body_;
};

class GrpcScanStreamTest : public ::testing::TestWithParam<GrpcServerMode> {
 protected:
  void Start(uint32_t documents, size_t body_bytes) {
    auto server = GrpcRuntime::Start({.listen = "127.0.0.1:0", .server_mode = GetParam()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    service_ = std::make_shared<NumberedScanService>(*server_, documents, body_bytes);
    server_->Serve(kNode, service_);
    auto client = GrpcRuntime::Start({.coordinator = server_->advertised_address()});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    client_->SetAddress(kNode, server_->advertised_address());
  }

  struct Result {
    Status status;
    std::vector<size_t> page_sizes;  // documents of each OK page
    std::vector<std::string> keys;
    Status error_page;  // the status of an error page, if one came
  };

  // Streams from the start; `stop_after` > 0 stops (kAborted) after that many pages.
  Result Stream(uint32_t max_documents, uint32_t max_bytes = 0, size_t stop_after = 0) {
    Result result;
    result.status = client_->StreamScan(
        kNode, transport::ScanRequest{.max_documents = max_documents, .max_bytes = max_bytes},
        kTimeout, [&](transport::Response response) -> Status {
          if (!response.status.ok()) {
            result.error_page = response.status;
            return OkStatus();
          }
          auto& page = std::get<transport::ScanResponse>(response.body);
          result.page_sizes.push_back(page.documents.size());
          for (auto& d : page.documents) result.keys.push_back(std::move(d.primary_key));
          if (stop_after != 0 && result.page_sizes.size() == stop_after) {
            return AbortedError("the reader has enough");
          }
          return OkStatus();
        });
    return result;
  }

  void SetLimits(const StreamLimits& limits) { ASSERT_TRUE(server_->SetStreamLimits(limits).ok()); }

  std::unique_ptr<GrpcRuntime> server_;
  std::shared_ptr<NumberedScanService> service_;
  std::unique_ptr<GrpcRuntime> client_;
};

INSTANTIATE_TEST_SUITE_P(ServerModes, GrpcScanStreamTest,
                         ::testing::Values(GrpcServerMode::kSync, GrpcServerMode::kCallback),
                         [](const auto& info) {
                           return info.param == GrpcServerMode::kSync ? "Sync" : "Callback";
                         });

TEST_P(GrpcScanStreamTest, PagesArriveInOrderAndAnErrorPageEndsTheStream) {
  Start(/*documents=*/2500, /*body_bytes=*/10);
  Result all = Stream(1000);
  ASSERT_TRUE(all.status.ok()) << all.status;
  EXPECT_EQ(all.page_sizes, (std::vector<size_t>{1000, 1000, 500}));
  ASSERT_EQ(all.keys.size(), 2500u);
  for (uint32_t i = 0; i < 2500; ++i) ASSERT_EQ(all.keys[i], Key(i));

  // WRONG_SHARD at document 1500: two pages, then the error page, then nothing.
  service_->wrong_shard_at = 1500;
  Result moved = Stream(750);
  ASSERT_TRUE(moved.status.ok()) << moved.status;
  EXPECT_EQ(moved.page_sizes, (std::vector<size_t>{750, 750}));
  EXPECT_EQ(transport::ClusterErrorOf(moved.error_page), transport::ClusterError::kWrongShard);

  // Zero documents per message: refused before any page.
  Status zero = client_->StreamScan(kNode, transport::ScanRequest{.max_documents = 0}, kTimeout,
                                    [](transport::Response) { return OkStatus(); });
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument) << zero;
}

TEST_P(GrpcScanStreamTest, DocumentsPerMessageLimit) {
  Start(/*documents=*/25, /*body_bytes=*/10);
  SetLimits({.max_documents = 10,
             .max_bytes = kDefaultStreamBytes,
             .max_streams = kDefaultMaxStreams,
             .max_duration = kDefaultMaxStreamDuration});
  Result at = Stream(10);
  ASSERT_TRUE(at.status.ok()) << at.status;
  EXPECT_EQ(at.page_sizes, (std::vector<size_t>{10, 10, 5}));
  const int pages_before = service_->pages;
  Result past = Stream(11);
  EXPECT_EQ(past.status.code(), StatusCode::kInvalidArgument) << past.status;
  EXPECT_TRUE(past.page_sizes.empty());
  EXPECT_EQ(service_->pages, pages_before) << "a refused stream ran the handler";
}

TEST_P(GrpcScanStreamTest, BytesPerMessageLimit) {
  // Each document is 6 + 100 bytes of key and body.
  Start(/*documents=*/9, /*body_bytes=*/100);
  const auto limits = [](uint32_t bytes) {
    return StreamLimits{.max_documents = kDefaultStreamDocuments,
                        .max_bytes = bytes,
                        .max_streams = kDefaultMaxStreams,
                        .max_duration = kDefaultMaxStreamDuration};
  };
  SetLimits(limits(3 * 106));  // at the limit: three documents per message
  Result at = Stream(1000);
  ASSERT_TRUE(at.status.ok()) << at.status;
  EXPECT_EQ(service_->max_bytes_seen, 3u * 106);
  EXPECT_EQ(at.page_sizes, (std::vector<size_t>{3, 3, 3}));
  SetLimits(limits(3 * 106 - 1));  // one byte less: the third document waits
  Result past = Stream(1000);
  ASSERT_TRUE(past.status.ok()) << past.status;
  EXPECT_EQ(past.page_sizes, (std::vector<size_t>{2, 2, 2, 2, 1}));
  EXPECT_EQ(past.keys.size(), 9u);
  // A client's smaller bound is kept; a larger one is the server's.
  Stream(1000, /*max_bytes=*/106);
  EXPECT_EQ(service_->max_bytes_seen, 106u);
  Stream(1000, /*max_bytes=*/100'000);
  EXPECT_EQ(service_->max_bytes_seen, 3u * 106 - 1);
  // A limit below one document: each goes alone.
  SetLimits(limits(1));
  Result alone = Stream(1000);
  ASSERT_TRUE(alone.status.ok()) << alone.status;
  EXPECT_EQ(alone.page_sizes, std::vector<size_t>(9, 1));
  // Zero limits are refused and change nothing.
  EXPECT_EQ(server_->SetStreamLimits(limits(0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->stream_limits().max_bytes, 1u);
}

TEST_P(GrpcScanStreamTest, ConcurrentStreamsLimit) {
  Start(/*documents=*/20, /*body_bytes=*/10);
  SetLimits({.max_documents = kDefaultStreamDocuments,
             .max_bytes = kDefaultStreamBytes,
             .max_streams = 2,
             .max_duration = kDefaultMaxStreamDuration});
  service_->open = false;
  std::vector<Result> held(2);
  std::vector<std::thread> readers;
  for (auto& result : held) {
    readers.emplace_back([this, &result] { result = Stream(5); });
  }
  // At the limit: both streams are being served (their first pages wait).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (service_->waiting < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(service_->waiting, 2);
  // One past: refused at once.
  Result third = Stream(5);
  EXPECT_EQ(third.status.code(), StatusCode::kResourceExhausted) << third.status;
  EXPECT_TRUE(third.page_sizes.empty());
  service_->open = true;
  for (auto& reader : readers) reader.join();
  for (const auto& result : held) {
    EXPECT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(result.keys.size(), 20u);
  }
  // Finished streams give their slots back (the server may see the end after the client).
  Result again;
  for (int i = 0; i < 600; ++i) {
    again = Stream(5);
    if (again.status.code() != StatusCode::kResourceExhausted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(again.status.ok()) << again.status;
}

TEST_P(GrpcScanStreamTest, StreamDeadlineEndsTheStream) {
  Start(/*documents=*/40, /*body_bytes=*/10);
  service_->page_micros = 50'000;  // 40 pages of one document: two seconds at least
  const auto limits = [](Micros duration) {
    return StreamLimits{.max_documents = kDefaultStreamDocuments,
                        .max_bytes = kDefaultStreamBytes,
                        .max_streams = kDefaultMaxStreams,
                        .max_duration = duration};
  };
  SetLimits(limits(kTimeout));  // within the limit: the whole range
  Result within = Stream(1);
  ASSERT_TRUE(within.status.ok()) << within.status;
  EXPECT_EQ(within.keys.size(), 40u);
  SetLimits(limits(300'000));  // past it: the stream ends, the pages it sent stay
  Result past = Stream(1);
  EXPECT_EQ(past.status.code(), StatusCode::kDeadlineExceeded) << past.status;
  EXPECT_LT(past.keys.size(), 40u);
  for (size_t i = 0; i < past.keys.size(); ++i) EXPECT_EQ(past.keys[i], Key(i));
}

TEST_P(GrpcScanStreamTest, CancelStopsTheServerWhichReadsAheadBoundedly) {
  constexpr uint32_t kPages = 400;  // of 256 KiB: 100 MiB if the server ran to the end
  Start(kPages, /*body_bytes=*/256 << 10);
  SetLimits({.max_documents = kDefaultStreamDocuments,
             .max_bytes = kDefaultStreamBytes,
             .max_streams = 1,
             .max_duration = kDefaultMaxStreamDuration});
  Result first = Stream(1, /*max_bytes=*/0, /*stop_after=*/1);
  EXPECT_EQ(first.status.code(), StatusCode::kAborted) << first.status;
  EXPECT_EQ(first.keys, (std::vector<std::string>{Key(0)}));
  // The slot comes back once the server noticed the cancellation.
  Result again;
  for (int i = 0; i < 600; ++i) {
    again = Stream(1, 0, /*stop_after=*/1);
    if (again.status.code() != StatusCode::kResourceExhausted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(again.status.code(), StatusCode::kAborted) << again.status;
  // Flow control stopped each stream long before its end.
  EXPECT_LT(service_->pages, static_cast<int>(kPages)) << "the server ran ahead unboundedly";
}

}  // namespace
}  // namespace shoal::net
