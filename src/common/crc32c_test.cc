#include "src/common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace shoal {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
}

TEST(Crc32cTest, ExtendEqualsOneCallAtEverySplit) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 31 + 7));
  const uint32_t whole = Crc32c(data);
  for (size_t split = 0; split <= data.size(); split += 37) {
    const std::string_view view(data);
    EXPECT_EQ(Crc32cExtend(Crc32c(view.substr(0, split)), view.substr(split)), whole) << split;
  }
}

TEST(Crc32cTest, OneFlippedBitChangesTheChecksum) {
  std::string data(4096, 'x');
  const uint32_t before = Crc32c(data);
  data[2049] ^= 0x10;
  EXPECT_NE(Crc32c(data), before);
}

}  // namespace
}  // namespace shoal
