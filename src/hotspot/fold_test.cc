#include "src/hotspot/fold.h"

#include <gtest/gtest.h>

namespace shoal::hotspot {
namespace {

FoldPtr Builtin(std::string_view name) {
  auto fold = FoldRegistry::Global().Find(name);
  EXPECT_TRUE(fold.ok()) << fold.status();
  return *fold;
}

TEST(FoldTest, BuiltinsCombineAndLift) {
  EXPECT_EQ(*Builtin("sum")->Combine(Value(2), Value(3)), Value(5));
  EXPECT_EQ(*Builtin("sum")->Combine(Value(2), Value(0.5)), Value(2.5));
  EXPECT_EQ(*Builtin("min")->Combine(Value(nullptr), Value(3)), Value(3));
  EXPECT_EQ(*Builtin("min")->Combine(Value(7), Value(3)), Value(3));
  EXPECT_EQ(*Builtin("max")->Combine(Value(7), Value(3)), Value(7));
  EXPECT_EQ(*Builtin("count")->Lift(Value("anything")), Value(1));
  EXPECT_EQ(*Builtin("bit_or")->Combine(Value(5), Value(2)), Value(7));
  EXPECT_EQ(*Builtin("set_union")->Lift(Value("b")), Value::array({"b"}));
  EXPECT_EQ(*Builtin("set_union")->Combine(Value::array({"b", "a"}), Value::array({"c", "a"})),
            Value::array({"a", "b", "c"}));
}

TEST(FoldTest, BadOperandsAreRefused) {
  EXPECT_EQ(Builtin("sum")->Lift(Value("x")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Builtin("bit_or")->Lift(Value(-1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Builtin("min")->Lift(Value::array()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Builtin("sum")->Combine(Value(INT64_MAX), Value(1)).status().code(),
            StatusCode::kOutOfRange);
}

TEST(FoldTest, BuiltinsObeyTheLaws) {
  EXPECT_TRUE(CheckFoldLaws(*Builtin("sum"), Value(0), {1, -4, 9, 0}).ok());
  EXPECT_TRUE(CheckFoldLaws(*Builtin("min"), Value(nullptr), {1, -4, 9, 0}).ok());
  EXPECT_TRUE(CheckFoldLaws(*Builtin("max"), Value(nullptr), {1, -4, 9, 0}).ok());
  EXPECT_TRUE(CheckFoldLaws(*Builtin("count"), Value(0), {"a", 1, nullptr}).ok());
  EXPECT_TRUE(CheckFoldLaws(*Builtin("bit_or"), Value(0), {1, 6, 1024}).ok());
  EXPECT_TRUE(
      CheckFoldLaws(*Builtin("set_union"), Value::array(), {"a", Value::array({"b", "c"}), 3})
          .ok());
}

TEST(FoldTest, RegistrationChecksTheLaws) {
  auto minus = std::make_shared<Fold>("minus_for_test", Value(0),
                                      [](const Value& a, const Value& b) -> StatusOr<Value> {
                                        return Value(a.get<int64_t>() - b.get<int64_t>());
                                      });
  EXPECT_EQ(FoldRegistry::Global().Register(minus, {1, 2, 3}).code(), StatusCode::kInvalidArgument);
  // Associative with a neutral element, but not commutative: the first non-zero value.
  auto first = std::make_shared<Fold>("first_for_test", Value(0),
                                      [](const Value& a, const Value& b) -> StatusOr<Value> {
                                        return a.get<int64_t>() != 0 ? a : b;
                                      });
  Status refused = FoldRegistry::Global().Register(first, {1, 2, 3});
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(MessageOf(refused).find("commutative"), std::string_view::npos) << refused;

  // Commutative but not associative: the mean of two.
  auto mean = std::make_shared<Fold>("mean_for_test", Value(0.0),
                                     [](const Value& a, const Value& b) -> StatusOr<Value> {
                                       return Value((a.get<double>() + b.get<double>()) / 2);
                                     });
  EXPECT_EQ(FoldRegistry::Global().Register(mean, {1.0, 2.0, 4.0}).code(),
            StatusCode::kInvalidArgument);

  auto gcd = std::make_shared<Fold>("gcd_for_test", Value(0),
                                    [](const Value& a, const Value& b) -> StatusOr<Value> {
                                      int64_t x = a.get<int64_t>(), y = b.get<int64_t>();
                                      while (y != 0) x = std::exchange(y, x % y);
                                      return Value(x < 0 ? -x : x);
                                    });
  EXPECT_TRUE(FoldRegistry::Global().Register(gcd, {12, 18, 7, 0}).ok());
  EXPECT_EQ(FoldRegistry::Global().Register(gcd, {12, 18}).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(FoldRegistry::Global().Find("gcd_for_test").ok());
  EXPECT_EQ(FoldRegistry::Global().Find("nope").status().code(), StatusCode::kInvalidArgument);

  // A fold that throws is an error, not a crash.
  auto throws = std::make_shared<Fold>("throws_for_test", Value(0),
                                       [](const Value& a, const Value& b) -> StatusOr<Value> {
                                         return Value(a.get<std::string>() + b.dump());
                                       });
  EXPECT_EQ(FoldRegistry::Global().Register(throws, {1, 2}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::hotspot
