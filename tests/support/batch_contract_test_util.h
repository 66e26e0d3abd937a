#pragma once

// The contract of Collection::Batch (include/shoal/shoal.h), checked the same way on an
// embedded Database (database_test.cc) and over the network (src/process/net_cluster_test.cc):
// results in input order, per-write errors that do not stop the others, the same-key order,
// a batch over all nodes, and each limit exactly at and one past it with nothing written.
// Test-only; gtest assertions.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "include/shoal/shoal.h"

namespace shoal::batch_test {

inline BatchWrite Write(BatchOp op, std::string key, std::string json = {},
                        uint64_t expected_version = 0) {
  return BatchWrite{.op = op,
                    .key = std::move(key),
                    .json = std::move(json),
                    .expected_version = expected_version};
}

// A JSON object of exactly `bytes` bytes (>= 8).
inline std::string JsonOfSize(size_t bytes) {
  return R"({"p":")" + std::string(bytes - 8, 'x') + "\"}";
}

// `c` is an empty collection of a cluster with several nodes.
inline void ExpectBatchContract(Collection& c) {
  auto existing = c.Insert("e", R"({"n":0})");
  ASSERT_TRUE(existing.ok()) << existing.status();
  std::vector<BatchWrite> writes = {
      Write(BatchOp::kInsert, "a", R"({"n":1})"),
      Write(BatchOp::kUpdate, "missing", R"({"n":2})"),
      Write(BatchOp::kInsert, "e", R"({"n":3})"),
      Write(BatchOp::kUpsert, "a", R"({"n":4})"),
      Write(BatchOp::kCompareAndSet, "e", R"({"n":5})", *existing),
      Write(BatchOp::kCompareAndSet, "e", R"({"n":6})", *existing),
      Write(BatchOp::kDelete, "a"),
      Write(BatchOp::kDelete, "a"),
      Write(BatchOp::kUpsert, "bad", "[1]"),
  };
  constexpr int kSpread = 200;  // keys enough to reach every node
  for (int i = 0; i < kSpread; ++i) {
    writes.push_back(
        Write(BatchOp::kUpsert, fmt::format("k{}", i), fmt::format(R"({{"i":{}}})", i)));
  }
  auto results = c.Batch(writes);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), writes.size());
  const auto& r = *results;
  ASSERT_TRUE(r[0].ok()) << r[0].status();
  EXPECT_EQ(r[1].status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r[2].status().code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(r[3].ok()) << r[3].status();
  EXPECT_GT(*r[3], *r[0]);
  ASSERT_TRUE(r[4].ok()) << r[4].status();
  EXPECT_EQ(r[5].status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(r[6].ok()) << r[6].status();
  EXPECT_EQ(r[7].status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r[8].status().code(), StatusCode::kInvalidArgument);
  for (int i = 0; i < kSpread; ++i) {
    const auto& result = r[9 + static_cast<size_t>(i)];
    ASSERT_TRUE(result.ok()) << i << ": " << result.status();
    auto got = c.Get(fmt::format("k{}", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->json, fmt::format(R"({{"i":{}}})", i));
    EXPECT_EQ(got->version, *result);
  }
  EXPECT_EQ(c.Get("a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.Get("e")->json, R"({"n":5})");

  // Limits: each exactly at (accepted) and one past (refused whole, nothing written).
  EXPECT_EQ(c.Batch({}).status().code(), StatusCode::kInvalidArgument);
  std::vector<BatchWrite> many;
  for (size_t i = 0; i <= kMaxBatchWrites; ++i) {
    many.push_back(Write(BatchOp::kUpsert, fmt::format("m{}", i), "{}"));
  }
  EXPECT_EQ(c.Batch(many).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.Get("m0").status().code(), StatusCode::kNotFound);
  many.pop_back();
  auto at_count = c.Batch(many);
  ASSERT_TRUE(at_count.ok()) << at_count.status();
  for (const auto& result : *at_count) EXPECT_TRUE(result.ok()) << result.status();

  const size_t per_write = kMaxBatchBytes / 16;  // a 3-byte key and its body
  std::vector<BatchWrite> big;
  for (int i = 0; i < 16; ++i) {
    big.push_back(Write(BatchOp::kUpsert, fmt::format("b{:02}", i), JsonOfSize(per_write - 3)));
  }
  big.back().json = JsonOfSize(per_write - 3 + 1);
  EXPECT_EQ(c.Batch(big).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.Get("b00").status().code(), StatusCode::kNotFound);
  big.back().json = JsonOfSize(per_write - 3);
  auto at_bytes = c.Batch(big);
  ASSERT_TRUE(at_bytes.ok()) << at_bytes.status();
  for (const auto& result : *at_bytes) EXPECT_TRUE(result.ok()) << result.status();
}

}  // namespace shoal::batch_test
