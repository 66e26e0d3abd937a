// EngineInfoLog: lines reach the file with RocksDB's level prefixes, the file rolls at its
// bound, and a log whose writes fail drops lines instead of failing or aborting (the engine's
// own logger asserts there).

#include "src/storage/engine_info_log.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

class EngineInfoLogTest : public ::testing::Test {
 protected:
  TempDir temp_;
  const std::string dir_ = temp_.path();
};

TEST_F(EngineInfoLogTest, WritesLinesAtAndAboveItsLevel) {
  std::shared_ptr<EngineInfoLog> log = EngineInfoLog::Open(dir_, rocksdb::InfoLogLevel::INFO_LEVEL);
  const std::shared_ptr<rocksdb::Logger> logger = log;
  rocksdb::Info(logger, "opened %s with %d files", "store", 3);
  rocksdb::Warn(logger, "a warning");
  rocksdb::Debug(logger, "not shown");
  ASSERT_TRUE(log->Close().ok());
  const std::string text = ReadFile(dir_ + "/LOG");
  EXPECT_NE(text.find("opened store with 3 files\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[WARN] a warning\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("not shown"), std::string::npos) << text;
  EXPECT_EQ(log->dropped_lines(), 0u);
}

TEST_F(EngineInfoLogTest, LongLinesAreWrittenWhole) {
  std::shared_ptr<EngineInfoLog> log = EngineInfoLog::Open(dir_);
  const std::shared_ptr<rocksdb::Logger> logger = log;
  const std::string longer(5000, 'x');
  rocksdb::Info(logger, "%s|end", longer.c_str());
  ASSERT_TRUE(log->Close().ok());
  EXPECT_NE(ReadFile(dir_ + "/LOG").find(longer + "|end\n"), std::string::npos);
}

TEST_F(EngineInfoLogTest, AFullFileRollsToTheOldOne) {
  {
    std::ofstream big(dir_ + "/LOG");
    big << std::string(EngineInfoLog::kMaxBytes, 'a');
  }
  std::shared_ptr<EngineInfoLog> log = EngineInfoLog::Open(dir_);
  const std::shared_ptr<rocksdb::Logger> logger = log;
  rocksdb::Info(logger, "after the roll");
  ASSERT_TRUE(log->Close().ok());
  EXPECT_EQ(std::filesystem::file_size(dir_ + "/LOG.old"), EngineInfoLog::kMaxBytes);
  EXPECT_NE(ReadFile(dir_ + "/LOG").find("after the roll"), std::string::npos);
  EXPECT_LT(std::filesystem::file_size(dir_ + "/LOG"), 200u);
}

TEST_F(EngineInfoLogTest, ALogThatCannotWriteDropsLinesAndGoesOn) {
  // A directory where the file should be: open fails, as on a file system gone read-only.
  std::filesystem::create_directories(dir_ + "/LOG");
  std::shared_ptr<EngineInfoLog> log = EngineInfoLog::Open(dir_);
  const std::shared_ptr<rocksdb::Logger> logger = log;
  rocksdb::Error(logger, "the disk failed");
  rocksdb::Info(logger, "again");
  EXPECT_EQ(log->dropped_lines(), 2u);
  std::filesystem::remove(dir_ + "/LOG");
  rocksdb::Info(logger, "the file is back");
  ASSERT_TRUE(log->Close().ok());
  EXPECT_EQ(log->dropped_lines(), 2u);
  EXPECT_NE(ReadFile(dir_ + "/LOG").find("the file is back"), std::string::npos);
}

// RocksDB's own logger would move the LOG of the first open aside (LOG.old.<time>) at the second;
// this one appends, so both opens are in one file.
TEST_F(EngineInfoLogTest, AStoreWritesItsEngineLogThroughIt) {
  for (int open = 0; open < 2; ++open) {
    std::unique_ptr<BucketStore> store = OpenTestStore(TestOptions(dir_ + "/store"));
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Close().ok());
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/store")) {
    EXPECT_NE(entry.path().filename().string().rfind("LOG.old", 0), 0u) << entry.path();
  }
  // RocksDB logs its version at every open.
  const std::string text = ReadFile(dir_ + "/store/LOG");
  const size_t first = text.find("RocksDB version");
  ASSERT_NE(first, std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("RocksDB version", first + 1), std::string::npos) << "one open only";
}

}  // namespace
}  // namespace shoal::storage
