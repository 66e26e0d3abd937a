#include "src/storage/store_options.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <filesystem>

#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

bool IsTmpfs(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

StoreOptions At(std::string path) {
  StoreOptions options;
  options.path = std::move(path);
  return options;
}

TEST(StoreOptionsTest, EnginePreallocatesFilesOnlyOffMemoryFileSystems) {
  TempDir dir;
  SHOAL_ASSERT_OK_AND_ASSIGN(EngineOptions disk, BuildEngineOptions(At(dir.Sub("not/yet"))));
  EXPECT_EQ(disk.db.allow_fallocate, !IsTmpfs(dir.path()));

  if (!IsTmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not a memory file system here";
  // A store path that does not exist yet is judged by its nearest existing ancestor.
  SHOAL_ASSERT_OK_AND_ASSIGN(EngineOptions memory,
                             BuildEngineOptions(At("/dev/shm/shoal-no-such-dir/store")));
  EXPECT_FALSE(memory.db.allow_fallocate);
}

TEST(StoreOptionsTest, RefusesAnEmptyPath) { EXPECT_FALSE(BuildEngineOptions(At("")).ok()); }

}  // namespace
}  // namespace shoal::storage
