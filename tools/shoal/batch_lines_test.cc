#include "tools/shoal/batch_lines.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace shoal::tools {
namespace {

StatusOr<std::vector<BatchLine>> Parse(const std::string& text) {
  std::istringstream in(text);
  return ParseBatchLines(in);
}

TEST(BatchLinesTest, ParsesEveryOpAndSkipsBlankLines) {
  auto lines = Parse(
      "{\"op\":\"put\",\"key\":\"a\",\"value\":{\"n\":1}}\n"
      "\n"
      "{\"op\":\"insert\",\"key\":\"b\",\"value\":{}}\n"
      "  \n"
      "{\"op\":\"update\",\"key\":\"a\",\"value\":{\"n\":[1,2]}}\n"
      "{\"op\":\"delete\",\"key\":\"b\"}");
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 4u);
  EXPECT_EQ((*lines)[0].line, 1u);
  EXPECT_EQ((*lines)[0].write.op, BatchOp::kUpsert);
  EXPECT_EQ((*lines)[0].write.key, "a");
  EXPECT_EQ((*lines)[0].write.json, R"({"n":1})");
  EXPECT_EQ((*lines)[1].line, 3u);
  EXPECT_EQ((*lines)[1].write.op, BatchOp::kInsert);
  EXPECT_EQ((*lines)[2].line, 5u);
  EXPECT_EQ((*lines)[2].write.op, BatchOp::kUpdate);
  EXPECT_EQ((*lines)[3].line, 6u);
  EXPECT_EQ((*lines)[3].write.op, BatchOp::kDelete);
  EXPECT_EQ((*lines)[3].write.json, "");
  EXPECT_TRUE(Parse("")->empty());
}

TEST(BatchLinesTest, AMalformedLineIsNamedByItsNumber) {
  const std::string good = "{\"op\":\"put\",\"key\":\"a\",\"value\":{}}\n";
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "not JSON"},
      {"[1]", "not a JSON object"},
      {"{\"key\":\"a\",\"value\":{}}", "missing \"op\""},
      {"{\"op\":\"upsert\",\"key\":\"a\",\"value\":{}}", "unknown op"},
      {"{\"op\":1,\"key\":\"a\"}", "\"op\" must be a string"},
      {"{\"op\":\"put\",\"value\":{}}", "\"key\" must be a string"},
      {"{\"op\":\"put\",\"key\":\"\",\"value\":{}}", "\"key\" is empty"},
      {"{\"op\":\"put\",\"key\":\"a\"}", "\"value\" must be a JSON object"},
      {"{\"op\":\"put\",\"key\":\"a\",\"value\":3}", "\"value\" must be a JSON object"},
      {"{\"op\":\"delete\",\"key\":\"a\",\"value\":{}}", "delete takes no"},
      {"{\"op\":\"put\",\"key\":\"a\",\"value\":{},\"x\":1}", "unknown member \"x\""},
  };
  for (const auto& [line, message] : cases) {
    auto parsed = Parse(good + good + line + "\n" + good);
    ASSERT_FALSE(parsed.ok()) << line;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << line;
    EXPECT_NE(parsed.status().message().find("line 3: " + message), std::string::npos)
        << line << " -> " << parsed.status();
  }
}

std::vector<BatchLine> Lines(size_t count, size_t json_bytes) {
  std::vector<BatchLine> out;
  for (size_t i = 0; i < count; ++i) {
    out.push_back(BatchLine{.line = i + 1,
                            .write = BatchWrite{.op = BatchOp::kUpsert,
                                                .key = "k",
                                                .json = std::string(json_bytes, 'x'),
                                                .expected_version = 0}});
  }
  return out;
}

TEST(BatchLinesTest, SplitsByCountAndBytesAtTheLimits) {
  // Writes: kMaxBatchWrites fit one batch, one more starts a second.
  auto lines = Lines(kMaxBatchWrites + 1, 1);
  auto batches = SplitBatches(lines, kMaxBatchWrites);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].size(), kMaxBatchWrites);
  EXPECT_EQ((*batches)[1].size(), 1u);
  batches = SplitBatches(std::span<const BatchLine>(lines).first(kMaxBatchWrites), kMaxBatchWrites);
  ASSERT_EQ(batches->size(), 1u);
  batches = SplitBatches(lines, 16);
  ASSERT_EQ(batches->size(), (kMaxBatchWrites + 1 + 15) / 16);

  // Bytes: 16 writes of exactly a sixteenth of kMaxBatchBytes fit; a byte more splits them.
  auto big = Lines(16, kMaxBatchBytes / 16 - 1);
  batches = SplitBatches(big, kMaxBatchWrites);
  ASSERT_EQ(batches->size(), 1u);
  big.back().write.json.push_back('x');
  batches = SplitBatches(big, kMaxBatchWrites);
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].size(), 15u);

  // One write alone over the limit, and bad batch sizes.
  auto huge = Lines(2, kMaxBatchBytes);
  auto refused = SplitBatches(huge, kMaxBatchWrites);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("line 1:"), std::string::npos) << refused.status();
  EXPECT_EQ(SplitBatches(lines, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitBatches(lines, kMaxBatchWrites + 1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::tools
