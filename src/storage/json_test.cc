#include "src/storage/json.h"

#include <gtest/gtest.h>

#include <string>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

std::string Nested(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  for (size_t i = 0; i < depth; ++i) s += "}";
  return s;
}

TEST(JsonTest, AcceptsObjects) {
  const DocumentLimits limits;
  EXPECT_TRUE(ValidateJsonBody("{}", limits).ok());
  EXPECT_TRUE(ValidateJsonBody(R"({"a":[1,2,{"b":null}],"c":"\u00e9"})", limits).ok());
  EXPECT_TRUE(ValidateJsonBody(" \n{\"a\":1} ", limits).ok());
}

TEST(JsonTest, RejectsNonObjectsAndMalformed) {
  const DocumentLimits limits;
  for (std::string_view bad :
       {"", "[]", "1", "\"s\"", "null", "{", "{\"a\":}", "{\"a\":1}x", "{\"a\":1,}", "{'a':1}"}) {
    EXPECT_TRUE(Is(ValidateJsonBody(bad, limits), ErrorReason::kInvalidDocument)) << bad;
  }
  EXPECT_FALSE(ValidateJsonBody("{\"a\":\"\xff\"}", limits).ok());  // invalid UTF-8
}

TEST(JsonTest, DepthLimitIsExact) {
  const DocumentLimits limits{.max_depth = 64};
  EXPECT_TRUE(ValidateJsonBody(Nested(64), limits).ok());
  EXPECT_TRUE(Is(ValidateJsonBody(Nested(65), limits), ErrorReason::kInvalidDocument));
  EXPECT_TRUE(ValidateJsonBody(Nested(3), {.max_depth = 3}).ok());
  EXPECT_FALSE(ValidateJsonBody(Nested(4), {.max_depth = 3}).ok());
  // Arrays count too.
  EXPECT_FALSE(ValidateJsonBody("{\"a\":[[1]]}", {.max_depth = 2}).ok());
  EXPECT_TRUE(ValidateJsonBody("{\"a\":[1]}", {.max_depth = 2}).ok());
}

TEST(JsonTest, SizeLimits) {
  const DocumentLimits limits{.max_primary_key_bytes = 4, .max_body_bytes = 16};
  EXPECT_TRUE(ValidateJsonBody("{\"a\":\"01234567\"}", limits).ok());  // 16 bytes
  const Status too_big = ValidateJsonBody("{\"a\":\"012345678\"}", limits);
  EXPECT_TRUE(Is(too_big, ErrorReason::kTooLarge));
  EXPECT_EQ(too_big.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(ValidatePrimaryKey("abcd", limits).ok());
  EXPECT_TRUE(Is(ValidatePrimaryKey("abcde", limits), ErrorReason::kTooLarge));
  EXPECT_TRUE(Is(ValidatePrimaryKey("", limits), ErrorReason::kInvalidDocument));
}

TEST(JsonTest, DefaultLimitsAdmitAMebibyte) {
  std::string body = "{\"pad\":\"" + std::string((1 << 20) - 10, 'x') + "\"}";
  ASSERT_EQ(body.size(), 1u << 20);
  EXPECT_TRUE(ValidateJsonBody(body, DocumentLimits()).ok());
  body.insert(8, "x");
  EXPECT_TRUE(Is(ValidateJsonBody(body, DocumentLimits()), ErrorReason::kTooLarge));
}

TEST(ErrorsTest, ReasonTravelsWithTheStatus) {
  const Status s = StorageError(ErrorReason::kDuplicate, "dup");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ReasonOf(s), ErrorReason::kDuplicate);
  EXPECT_EQ(ReasonOf(Prefixed(s, "ctx")), ErrorReason::kDuplicate);  // context keeps the reason
  EXPECT_EQ(ReasonOf(OkStatus()), std::nullopt);
  EXPECT_EQ(CodeOf(ErrorReason::kConditionFailed), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf(ErrorReason::kNotFound), StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal::storage
