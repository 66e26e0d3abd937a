#include "src/storage/test_support.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>

namespace shoal::storage {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "shoal-storage-XXXXXX").string();
  const char* made = mkdtemp(pattern.data());
  if (made == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

StoreOptions TestOptions(const std::string& path) {
  return StoreOptions{.path = path,
                      .sync = SyncPolicy::kPeriodic,
                      .sync_interval = std::chrono::milliseconds(0),
                      .block_cache_bytes = 4u << 20,
                      .write_buffer_bytes = 4u << 20,
                      .lock_stripes = 64,
                      .version_block = 1000};
}

std::unique_ptr<BucketStore> OpenTestStore(const StoreOptions& options) {
  auto store = BucketStore::Open(options);
  if (!store.ok()) {
    ADD_FAILURE() << store.status();
    return nullptr;
  }
  Status s = (*store)->CreateCollection({.id = kTestCollection, .name = "docs"});
  if (!s.ok()) ADD_FAILURE() << s;
  if (!(*store)->GetBucket(kTestBucket).ok()) {
    s = (*store)->AddBucket({.id = kTestBucket, .range = PointRange::All()});
    if (!s.ok()) ADD_FAILURE() << s;
  }
  return std::move(store).value();
}

std::string DocBody(int i) { return fmt::format(R"({{"n":{},"s":"v{}"}})", i, i); }

}  // namespace shoal::storage
