#include "src/storage/collection_name.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

TEST(CollectionNameTest, AcceptsLettersDigitsUnderscoresDotsAndDashes) {
  for (std::string_view name :
       {"users", "c", "U", "7", "_probe", "_shoal.schema", "_shoal.hot.votes", "split-move",
        "hot_16", "a.b-c_D9", "docs-", "v1.2"}) {
    EXPECT_TRUE(ValidateCollectionName(name).ok()) << name;
  }
  EXPECT_TRUE(ValidateCollectionName(std::string(kMaxCollectionNameBytes, 'x')).ok());
}

TEST(CollectionNameTest, RefusesEmptyLongAndOtherBytesNamingTheRule) {
  const std::string nul("a\0b", 3);
  for (std::string_view name :
       {std::string_view(""), std::string_view(nul), std::string_view("a\nb"),
        std::string_view("line\n"), std::string_view("a b"), std::string_view("a/b"),
        std::string_view(".hidden"), std::string_view(".."), std::string_view("-rf"),
        std::string_view("caf\xc3\xa9"), std::string_view("tab\t"), std::string_view("a:b")}) {
    const Status refused = ValidateCollectionName(name);
    EXPECT_TRUE(Is(refused, ErrorReason::kInvalidArgument)) << refused;
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(MessageOf(refused).find("a name has 1 to 256 bytes of letters, digits, '_', '.' "
                                      "and '-', and starts with a letter, a digit or '_'"),
              std::string_view::npos)
        << refused;
  }
  const Status too_long = ValidateCollectionName(std::string(kMaxCollectionNameBytes + 1, 'x'));
  EXPECT_TRUE(Is(too_long, ErrorReason::kInvalidArgument));
  // A long name is shown shortened, with its length.
  EXPECT_NE(MessageOf(too_long).find("\"... (257 bytes)"), std::string_view::npos) << too_long;
  // Bytes that do not print are shown escaped.
  EXPECT_NE(MessageOf(ValidateCollectionName("a\nb")).find(R"("a\nb")"), std::string_view::npos);
}

}  // namespace
}  // namespace shoal::storage
