#pragma once

// Test helpers for src/storage: temporary directories, stores opened with test options, and
// status assertions. Test-only.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "src/storage/bucket_store.h"

#define SHOAL_ASSERT_OK(expr)                \
  do {                                       \
    const ::shoal::Status shoal_s_ = (expr); \
    ASSERT_TRUE(shoal_s_.ok()) << shoal_s_;  \
  } while (false)

#define SHOAL_EXPECT_OK(expr)                \
  do {                                       \
    const ::shoal::Status shoal_s_ = (expr); \
    EXPECT_TRUE(shoal_s_.ok()) << shoal_s_;  \
  } while (false)

#define SHOAL_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  SHOAL_ASSERT_OK_AND_ASSIGN_IMPL_(SHOAL_CONCAT_(shoal_or_, __LINE__), lhs, expr)
#define SHOAL_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                 \
  lhs = std::move(tmp).value()

namespace shoal::storage {

// A fresh directory under the system temporary directory, removed with its contents on
// destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline constexpr CollectionId kTestCollection{1};
inline constexpr BucketId kTestBucket{1};

// Fast options for unit tests: no fsync, small buffers.
[[nodiscard]] StoreOptions TestOptions(const std::string& path);

// Opens `options` and, unless already present, registers kTestCollection ("docs") and a ReadWrite
// bucket kTestBucket over the whole hash space. Fails the test on error (returns null).
[[nodiscard]] std::unique_ptr<BucketStore> OpenTestStore(const StoreOptions& options);

// {"n":i,"s":"v<i>"}.
[[nodiscard]] std::string DocBody(int i);

}  // namespace shoal::storage
