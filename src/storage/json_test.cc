#include "src/storage/json.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

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

// A body nesting `depth` containers: the top-level object, then depth - 1 containers, each an
// array where `kinds` (read cyclically) says 'a' and an object otherwise. The innermost holds
// `innermost`, or nothing when it is empty.
std::string Nest(size_t depth, std::string_view kinds, std::string_view innermost) {
  std::string opening;
  std::string closing;
  for (size_t level = 1; level <= depth; ++level) {
    const bool array = level > 1 && kinds[(level - 2) % kinds.size()] == 'a';
    const bool innermost_level = level == depth;
    if (array) {
      opening += "[";
      closing.insert(0, "]");
    } else {
      opening += innermost_level && innermost.empty() ? "{" : "{\"a\":";
      closing.insert(0, "}");
    }
  }
  return opening + std::string(innermost) + closing;
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

TEST(JsonTest, DepthLimitCountsEveryArrayAndObjectEmptyOrNot) {
  for (const size_t max_depth : {size_t{1}, size_t{2}, size_t{3}, size_t{64}}) {
    const DocumentLimits limits{.max_depth = max_depth};
    for (std::string_view kinds : {"o", "a", "ao", "oa"}) {
      for (std::string_view innermost : {"1", ""}) {
        const std::string at_limit = Nest(max_depth, kinds, innermost);
        EXPECT_TRUE(ValidateJsonBody(at_limit, limits).ok()) << at_limit;
        const std::string deeper = Nest(max_depth + 1, kinds, innermost);
        const Status refused = ValidateJsonBody(deeper, limits);
        EXPECT_TRUE(Is(refused, ErrorReason::kInvalidDocument)) << deeper << ": " << refused;
        EXPECT_EQ(MessageOf(refused), "document body nests deeper than the limit of " +
                                          std::to_string(max_depth) + " (docs/limits.md)")
            << deeper;
      }
    }
  }
  const DocumentLimits limits{.max_depth = 64};
  // {"a":[[...]]} with 63 brackets nests 64 deep, with 64 brackets 65.
  EXPECT_TRUE(
      ValidateJsonBody("{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}", limits).ok());
  EXPECT_FALSE(
      ValidateJsonBody("{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}", limits).ok());
  // Empty containers at the smallest limits, and a deep one after shallow siblings.
  EXPECT_TRUE(ValidateJsonBody("{}", {.max_depth = 1}).ok());
  EXPECT_FALSE(ValidateJsonBody("{\"a\":[]}", {.max_depth = 1}).ok());
  EXPECT_FALSE(ValidateJsonBody("{\"a\":{}}", {.max_depth = 1}).ok());
  const std::string siblings = R"({"x":1,"y":[1,[2]],"z":[{},{"w":[]}]})";
  EXPECT_TRUE(ValidateJsonBody(siblings, {.max_depth = 4}).ok());
  EXPECT_FALSE(ValidateJsonBody(siblings, {.max_depth = 3}).ok());
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
