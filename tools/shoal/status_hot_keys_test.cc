#include "tools/shoal/status_hot_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/hotspot/top_k_sketch.h"

namespace shoal::tools {
namespace {

constexpr uint64_t kSecond = 1'000'000;

// What a node reports: its sketch's ten hottest keys, as rows of node 1.
std::vector<HotKeyRow> Reported(const hotspot::TopKSketch& sketch, uint64_t now) {
  std::vector<HotKeyRow> rows;
  for (const hotspot::HotKey& key : sketch.Top(10, now)) {
    rows.push_back(HotKeyRow{.node = NodeId(1),
                             .stat = {.collection = CollectionId(3),
                                      .primary_key = key.key,
                                      .writes_per_second = key.writes_per_second,
                                      .error_per_second = key.error_per_second}});
  }
  return rows;
}

std::vector<std::string> Keys(const std::vector<HotKeyRow>& rows) {
  std::vector<std::string> out;
  for (const HotKeyRow& row : rows) out.push_back(row.stat.primary_key);
  return out;
}

// A stream of distinct keys (a bulk load) fills the sketch with keys written once, each with an
// estimate inherited from the counter it took over: none of them is shown, the one key written
// over and over is (a key of more than 1/capacity of the writes keeps its counter).
TEST(StatusHotKeysTest, KeysWrittenOnceInAStreamOfDistinctKeysAreNotHot) {
  hotspot::TopKSketch sketch;
  uint64_t now = 0;
  for (int i = 0; i < 20'000; ++i) {
    now = static_cast<uint64_t>(i) * kSecond / 1000;  // 1 000 writes/s for 20 s
    sketch.Add("load" + std::to_string(i), now);
    if (i % 20 == 0) sketch.Add("counter", now);  // 50 writes/s, over 1/64 of the stream
  }
  std::vector<HotKeyRow> rows = Reported(sketch, now);
  ASSERT_EQ(rows.size(), 10u);
  int inflated = 0;
  for (const HotKeyRow& row : rows) {
    if (row.stat.primary_key != "counter" && row.stat.writes_per_second > 1) ++inflated;
  }
  EXPECT_GT(inflated, 0) << "the sketch's estimates alone show keys written once as hot";
  KeepHottest(&rows);
  EXPECT_EQ(Keys(rows), (std::vector<std::string>{"counter"}));
  EXPECT_GT(rows[0].AtLeast(), 30.0);
  EXPECT_LE(rows[0].AtLeast(), rows[0].stat.writes_per_second);
}

TEST(StatusHotKeysTest, AKeyIsShownOnceItHasTheMinimumRateForCertain) {
  hotspot::TopKSketch sketch;
  sketch.Add("once", 0);
  for (int i = 0; i < 5; ++i) sketch.Add("five", static_cast<uint64_t>(i) * kSecond / 10);
  std::vector<HotKeyRow> rows = Reported(sketch, kSecond / 2);
  ASSERT_EQ(rows.size(), 2u);
  KeepHottest(&rows);
  EXPECT_EQ(Keys(rows), (std::vector<std::string>{"five"}));
  const std::string text = HotKeysText(rows, {{CollectionId(3), "users"}});
  EXPECT_NE(text.find("users"), std::string::npos) << text;
  EXPECT_NE(text.find("five"), std::string::npos) << text;
  rows.clear();
  EXPECT_EQ(HotKeysText(rows, {}), "hot keys: none of 0.1 writes/s or more\n");
}

TEST(StatusHotKeysTest, RanksByTheRateForCertainAndKeepsTen) {
  std::vector<HotKeyRow> rows;
  for (int i = 0; i < 12; ++i) {
    rows.push_back(HotKeyRow{.node = NodeId(1 + i % 3),
                             .stat = {.collection = CollectionId(1),
                                      .primary_key = "k" + std::to_string(i),
                                      .writes_per_second = 100.0 + i,
                                      .error_per_second = 100.0 - i}});
  }
  // k0 has the highest estimate but only 0 for certain: not shown; k1 has 2, k11 has 22.
  rows.push_back(HotKeyRow{.node = NodeId(1),
                           .stat = {.collection = CollectionId(1),
                                    .primary_key = "big",
                                    .writes_per_second = 500,
                                    .error_per_second = 499.95}});
  KeepHottest(&rows);
  ASSERT_EQ(rows.size(), kStatusHotKeys);
  EXPECT_EQ(rows.front().stat.primary_key, "k11");
  EXPECT_EQ(rows.back().stat.primary_key, "k2");
  EXPECT_EQ(PrintableKey(std::string("a\\b\x01", 4)), "a\\x5cb\\x01");
}

}  // namespace
}  // namespace shoal::tools
