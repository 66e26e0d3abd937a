#include "src/hotspot/cell_state.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace shoal::hotspot {
namespace {

void ExpectRoundTrip(const CellState& cell) {
  const std::string body = cell.Encode();
  auto decoded = CellState::Decode(body);
  ASSERT_TRUE(decoded.ok()) << body << ": " << decoded.status();
  EXPECT_EQ(decoded->value, cell.value) << body;
  EXPECT_EQ(decoded->sealed, cell.sealed) << body;
  EXPECT_EQ(decoded->updates, cell.updates) << body;
  EXPECT_EQ(decoded->owner, cell.owner) << body;
  // The general reader (a parse of the whole body) agrees with the integer fast path.
  const Value json = Value::parse(body);
  EXPECT_EQ(json.at("v"), cell.value) << body;
  EXPECT_EQ(decoded->value.type(), json.at("v").type()) << body;
}

TEST(CellStateTest, WritesTheCompactShape) {
  EXPECT_EQ((CellState{.value = Value(0), .sealed = false, .updates = 0, .owner = {}}.Encode()),
            R"({"v":0,"n":0})");
  EXPECT_EQ((CellState{.value = Value(-3), .sealed = true, .updates = 12, .owner = {}}.Encode()),
            R"({"v":-3,"n":12,"s":1})");
  EXPECT_EQ((CellState{.value = Value(4), .sealed = true, .updates = 1, .owner = "00ff"}.Encode()),
            R"({"v":4,"n":1,"s":1,"owner":"00ff"})");
}

TEST(CellStateTest, RoundTripsEveryValueKind) {
  const std::vector<Value> values = {
      Value(0),
      Value(1),
      Value(-1),
      Value(std::numeric_limits<int64_t>::min()),
      Value(std::numeric_limits<int64_t>::max()),
      Value(std::numeric_limits<uint64_t>::max()),
      Value(2.5),
      Value(-0.0),
      Value(nullptr),
      Value::array({1, 2, "x"}),
      Value("a \"quoted\" string"),
  };
  for (const Value& value : values) {
    for (bool sealed : {false, true}) {
      ExpectRoundTrip(CellState{.value = value, .sealed = sealed, .updates = 7, .owner = {}});
    }
    ExpectRoundTrip(CellState{.value = value,
                              .sealed = true,
                              .updates = std::numeric_limits<uint64_t>::max(),
                              .owner = "6869"});
  }
}

// Bodies exactly as the encoder before the compact codec wrote them (nlohmann's dump: members
// sorted by name, "sealed": true, "n" left out when zero): cells stored by an older version.
TEST(CellStateTest, ReadsThePreviousFormat) {
  struct Case {
    std::string body;
    Value value;
    bool sealed;
    uint64_t updates;
    std::string owner;
  };
  const std::vector<Case> cases = {
      {.body = R"({"v":0})", .value = Value(0), .sealed = false, .updates = 0, .owner = ""},
      {.body = R"({"n":9,"v":41})", .value = Value(41), .sealed = false, .updates = 9, .owner = ""},
      {.body = R"({"n":4,"sealed":true,"v":-7})",
       .value = Value(-7),
       .sealed = true,
       .updates = 4,
       .owner = ""},
      {.body = R"({"n":1,"owner":"00ff","sealed":true,"v":2.5})",
       .value = Value(2.5),
       .sealed = true,
       .updates = 1,
       .owner = "00ff"},
      {.body = R"({"n":3,"v":["a","b"]})",
       .value = Value::array({"a", "b"}),
       .sealed = false,
       .updates = 3,
       .owner = ""},
      {.body = R"({"sealed":false,"v":null})",
       .value = Value(nullptr),
       .sealed = false,
       .updates = 0,
       .owner = ""},
  };
  for (const Case& c : cases) {
    auto decoded = CellState::Decode(c.body);
    ASSERT_TRUE(decoded.ok()) << c.body << ": " << decoded.status();
    EXPECT_EQ(decoded->value, c.value) << c.body;
    EXPECT_EQ(decoded->sealed, c.sealed) << c.body;
    EXPECT_EQ(decoded->updates, c.updates) << c.body;
    EXPECT_EQ(decoded->owner, c.owner) << c.body;
    // Written back, it takes the compact shape and keeps its content.
    ExpectRoundTrip(*decoded);
  }
}

// Bodies the fast path does not take go to the general reader, which types numbers the same
// way (a number beyond 64 bits is a double, as nlohmann reads it).
TEST(CellStateTest, NumbersOutsideTheFastPathKeepTheirType) {
  auto big = CellState::Decode(R"({"v":18446744073709551616,"n":1})");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_TRUE(big->value.is_number_float());
  auto exponent = CellState::Decode(R"({"v":1e3,"n":2})");
  ASSERT_TRUE(exponent.ok()) << exponent.status();
  EXPECT_TRUE(exponent->value.is_number_float());
  EXPECT_EQ(exponent->updates, 2u);
  auto spaced = CellState::Decode(R"({ "v" : 5 , "n" : 2 , "s" : 1 })");
  ASSERT_TRUE(spaced.ok()) << spaced.status();
  EXPECT_EQ(spaced->value, Value(5));
  EXPECT_TRUE(spaced->sealed);
  auto negative_count = CellState::Decode(R"({"v":5,"n":-2})");
  ASSERT_TRUE(negative_count.ok()) << negative_count.status();
  EXPECT_EQ(negative_count->updates, 0u);
}

TEST(CellStateTest, RefusesBodiesWithoutAValue) {
  for (const char* body : {R"({"x":1})", R"({"n":1})", "", "[1,2]", R"({"v":01,"n":1})",
                           R"({"v":1,"n":1)", "not json"}) {
    auto decoded = CellState::Decode(body);
    ASSERT_FALSE(decoded.ok()) << body;
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << body;
  }
}

}  // namespace
}  // namespace shoal::hotspot
