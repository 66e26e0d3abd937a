#include "tools/shoal/batch_lines.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ext/stdio_filebuf.h>
#include <sstream>
#include <string>

namespace shoal::tools {
namespace {

// Every batch of `text`, or the reader's first error.
StatusOr<std::vector<std::vector<BatchLine>>> Batches(const std::string& text,
                                                      size_t max_writes = kMaxBatchWrites) {
  std::istringstream in(text);
  BatchReader reader(in, max_writes);
  std::vector<std::vector<BatchLine>> out;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(std::vector<BatchLine> batch, reader.Next());
    if (batch.empty()) return out;
    out.push_back(std::move(batch));
  }
}

// Every line of `text` in one batch, or the reader's first error.
StatusOr<std::vector<BatchLine>> Parse(const std::string& text) {
  SHOAL_ASSIGN_OR_RETURN(auto batches, Batches(text));
  if (batches.size() > 1) return InternalError("more than one batch");
  return batches.empty() ? std::vector<BatchLine>{} : batches.front();
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

// `count` put lines whose key and JSON value together hold `bytes` bytes ("k" + {"p":"x..."}).
std::string Lines(size_t count, size_t bytes) {
  const size_t padding = bytes - std::string_view(R"(k{"p":""})").size();
  std::string line =
      fmt::format(R"({{"op":"put","key":"k","value":{{"p":"{}"}}}})", std::string(padding, 'x'));
  std::string out;
  for (size_t i = 0; i < count; ++i) out += line + "\n";
  return out;
}

std::vector<size_t> Sizes(const std::vector<std::vector<BatchLine>>& batches) {
  std::vector<size_t> out;
  for (const auto& batch : batches) out.push_back(batch.size());
  return out;
}

TEST(BatchLinesTest, SplitsByCountAndBytesAtTheLimits) {
  // Writes: kMaxBatchWrites fit one batch, one more starts a second.
  auto batches = Batches(Lines(kMaxBatchWrites + 1, 16));
  ASSERT_TRUE(batches.ok()) << batches.status();
  EXPECT_EQ(Sizes(*batches), (std::vector<size_t>{kMaxBatchWrites, 1}));
  EXPECT_EQ(Sizes(*Batches(Lines(kMaxBatchWrites, 16))), (std::vector<size_t>{kMaxBatchWrites}));
  EXPECT_EQ(Batches(Lines(kMaxBatchWrites + 1, 16), 16)->size(), (kMaxBatchWrites + 1 + 15) / 16);
  // The line numbers run on across batches.
  EXPECT_EQ((*Batches(Lines(3, 16), 2))[1][0].line, 3u);

  // Bytes: 16 writes of exactly a sixteenth of kMaxBatchBytes fit; a byte more splits them.
  const std::string sixteenth = Lines(1, kMaxBatchBytes / 16);
  std::string text;
  for (int i = 0; i < 16; ++i) text += sixteenth;
  EXPECT_EQ(Sizes(*Batches(text)), (std::vector<size_t>{16}));
  text += Lines(1, 16);
  EXPECT_EQ(Sizes(*Batches(text)), (std::vector<size_t>{16, 1}));
  text = Lines(15, kMaxBatchBytes / 16) + Lines(1, kMaxBatchBytes / 16 + 1) + Lines(1, 16);
  EXPECT_EQ(Sizes(*Batches(text)), (std::vector<size_t>{15, 2}));

  // One write alone over the limit, after a batch's worth, and bad batch sizes.
  auto refused = Batches(Lines(2, 16) + Lines(1, kMaxBatchBytes + 1), 2);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("line 3:"), std::string::npos) << refused.status();
  EXPECT_EQ(Batches(Lines(1, 16), 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Batches(Lines(1, 16), kMaxBatchWrites + 1).status().code(),
            StatusCode::kInvalidArgument);
}

// A malformed line after whole batches fails the batch that would hold it; those before come
// first, so a streamed input writes them.
TEST(BatchLinesTest, TheBatchesBeforeAMalformedLineAreReadFirst) {
  std::istringstream in(Lines(4, 16) + "{bad\n" + Lines(1, 16));
  BatchReader reader(in, 2);
  for (int i = 0; i < 2; ++i) {
    auto batch = reader.Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->size(), 2u);
  }
  auto failed = reader.Next();
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("line 5: not JSON"), std::string::npos)
      << failed.status();
  EXPECT_FALSE(reader.Next().ok()) << "the reader stays failed";
}

// From a pipe, a batch goes once the pipe holds no more: a slow writer's lines are not held back
// until a full batch.
TEST(BatchLinesTest, ABatchFromAPipeEndsWhenThePipeIsEmpty) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  __gnu_cxx::stdio_filebuf<char> buffer(fds[0], std::ios::in);
  std::istream in(&buffer);
  BatchReader reader(in, kMaxBatchWrites);
  auto write = [&](const std::string& text) {
    ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  };
  write(Lines(3, 16));
  auto batch = reader.Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->size(), 3u);
  write(Lines(2, 16));
  batch = reader.Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->size(), 2u);
  EXPECT_EQ(batch->front().line, 4u);
  close(fds[1]);
  batch = reader.Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->empty());
}

}  // namespace
}  // namespace shoal::tools
