#include "src/common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace shoal {
namespace {

TEST(StatusTest, OkHoldsNothing) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_TRUE(ok.message().empty());
  EXPECT_EQ(ok.ToString(), "OK");
  EXPECT_EQ(ok, OkStatus());
  // An OK code drops its message.
  EXPECT_EQ(Status(StatusCode::kOk, "ignored"), OkStatus());
}

TEST(StatusTest, ErrorsCarryCodeAndMessage) {
  const Status error = InvalidArgumentError("key too long");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(), "key too long");
  EXPECT_EQ(error.ToString(), "INVALID_ARGUMENT: key too long");
  std::ostringstream out;
  out << error << " " << StatusCode::kUnavailable;
  EXPECT_EQ(out.str(), "INVALID_ARGUMENT: key too long UNAVAILABLE");
  EXPECT_EQ(IoError("disk").code(), StatusCode::kDataLoss);
  EXPECT_NE(error, InvalidArgumentError("other"));
  EXPECT_NE(error, NotFoundError("key too long"));
}

// The codes are gRPC's, number for number: a status crosses the wire as its number.
TEST(StatusTest, CodesHaveGrpcNumbersAndNames) {
  const std::vector<std::string> names = {"OK",
                                          "CANCELLED",
                                          "UNKNOWN",
                                          "INVALID_ARGUMENT",
                                          "DEADLINE_EXCEEDED",
                                          "NOT_FOUND",
                                          "ALREADY_EXISTS",
                                          "PERMISSION_DENIED",
                                          "RESOURCE_EXHAUSTED",
                                          "FAILED_PRECONDITION",
                                          "ABORTED",
                                          "OUT_OF_RANGE",
                                          "UNIMPLEMENTED",
                                          "INTERNAL",
                                          "UNAVAILABLE",
                                          "DATA_LOSS",
                                          "UNAUTHENTICATED"};
  for (int code = 0; code < static_cast<int>(names.size()); ++code) {
    EXPECT_EQ(StatusCodeToString(static_cast<StatusCode>(code)), names[code]);
  }
  EXPECT_EQ(StatusCodeToString(static_cast<StatusCode>(99)), "");
  EXPECT_EQ(Status(static_cast<StatusCode>(99), "m").ToString(), "99: m");
}

TEST(StatusTest, PayloadsTravelWithCopiesAndPrefixes) {
  Status error = UnavailableError("down");
  error.SetPayload("a", std::string("\0x", 2));
  error.SetPayload("b", "2");
  error.SetPayload("a", "1");  // replaces
  EXPECT_EQ(error.GetPayload("a"), "1");
  EXPECT_EQ(error.GetPayload("b"), "2");
  EXPECT_EQ(error.GetPayload("c"), std::nullopt);
  const Status copy = error;
  EXPECT_EQ(copy, error);
  const Status prefixed = Prefixed(error, "Get n1");
  EXPECT_EQ(prefixed.message(), "Get n1: down");
  EXPECT_EQ(prefixed.GetPayload("b"), "2");
  EXPECT_EQ(Prefixed(OkStatus(), "ctx"), OkStatus());
  Status ok;
  ok.SetPayload("a", "1");  // nothing on OK
  EXPECT_EQ(ok.GetPayload("a"), std::nullopt);
  // Assignment copies deeply: changing the copy leaves the original.
  Status other = NotFoundError("x");
  other = error;
  other.SetPayload("b", "3");
  EXPECT_EQ(error.GetPayload("b"), "2");
}

struct Base {
  virtual ~Base() = default;
  virtual int Value() const { return 1; }
};
struct Derived : Base {
  int Value() const override { return 2; }
};

StatusOr<std::unique_ptr<Base>> MakeDerived() { return std::make_unique<Derived>(); }
StatusOr<std::string> MakeText(bool fail) {
  if (fail) return NotFoundError("no text");
  return "text";
}

TEST(StatusOrTest, HoldsAValueOrAnError) {
  StatusOr<std::string> text = MakeText(false);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text.status().ok());
  EXPECT_EQ(*text, "text");
  EXPECT_EQ(text->size(), 4u);
  const StatusOr<std::string> missing = MakeText(true);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.value_or("fallback"), "fallback");
  EXPECT_EQ(std::move(text).value(), "text");
  auto derived = MakeDerived();
  ASSERT_TRUE(derived.ok());
  EXPECT_EQ((*derived)->Value(), 2);
}

TEST(StatusOrTest, OkStatusWithoutAValueIsAnError) {
  const StatusOr<int> wrong = OkStatus();
  EXPECT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInternal);
  const StatusOr<int> empty;
  EXPECT_EQ(empty.status().code(), StatusCode::kUnknown);
}

TEST(StatusOrTest, AssignsAndConverts) {
  StatusOr<int> number = UnavailableError("later");
  number = 7;
  ASSERT_TRUE(number.ok());
  EXPECT_EQ(*number, 7);
  number = AbortedError("gone");
  EXPECT_FALSE(number.ok());
  EXPECT_EQ(number.emplace(9), 9);
  EXPECT_TRUE(number.ok());
  const StatusOr<long> widened = StatusOr<int>(5);
  EXPECT_EQ(*widened, 5);
  const StatusOr<long> failed = StatusOr<int>(NotFoundError("n"));
  EXPECT_EQ(failed.status().code(), StatusCode::kNotFound);
  StatusOr<std::optional<int>> none = std::nullopt;
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(StatusOrTest, ComparesAndPrints) {
  EXPECT_EQ(StatusOr<int>(3), StatusOr<int>(3));
  EXPECT_NE(StatusOr<int>(3), StatusOr<int>(4));
  EXPECT_NE(StatusOr<int>(3), StatusOr<int>(NotFoundError("3")));
  EXPECT_EQ(StatusOr<int>(NotFoundError("x")), StatusOr<int>(NotFoundError("x")));
  std::ostringstream out;
  out << StatusOr<int>(3) << " " << StatusOr<int>(AbortedError("no"));
  EXPECT_EQ(out.str(), "3 ABORTED: no");
}

StatusOr<int> Half(int n) {
  if (n % 2 != 0) return InvalidArgumentError("odd");
  return n / 2;
}
Status Quarter(int n, int* out) {
  SHOAL_ASSIGN_OR_RETURN(const int half, Half(n));
  SHOAL_ASSIGN_OR_RETURN(*out, Half(half));
  return OkStatus();
}
Status Check(bool fail) {
  SHOAL_RETURN_IF_ERROR(fail ? CancelledError("stop") : OkStatus());
  return OkStatus();
}

TEST(StatusOrTest, MacrosReturnTheFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  EXPECT_EQ(Quarter(6, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Check(false).ok());
  EXPECT_EQ(Check(true).code(), StatusCode::kCancelled);
}

TEST(StatusOrDeathTest, ValueOfAnErrorEndsTheProcess) {
  const StatusOr<int> error = NotFoundError("nothing");
  EXPECT_DEATH((void)error.value(), "value\\(\\) of a StatusOr that holds an error: NOT_FOUND");
}

}  // namespace
}  // namespace shoal
