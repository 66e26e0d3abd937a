#include "src/security/cert_expiry.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "src/common/log_capture.h"
#include "src/security/certificates.h"

namespace shoal::security {
namespace {

constexpr int64_t kDay = 86'400;

class CertExpiryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-cert-expiry-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    ASSERT_TRUE(CreateCa({.certs_dir = dir_}).ok());
    // A node certificate of 10 days, as one created long ago would be near its end.
    ASSERT_TRUE(CreateNodeCert({.certs_dir = dir_, .lifetime_days = 10}).ok());
    files_ = NodeTlsFiles(dir_);
    ca_end_ = ReadCertificate(files_.ca_cert)->not_after_unix;
    node_end_ = ReadCertificate(files_.cert)->not_after_unix;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  TlsFiles files_;
  int64_t ca_end_ = 0;
  int64_t node_end_ = 0;
};

TEST_F(CertExpiryTest, ListsTheCertificatesThatEndWithinTheWindow) {
  const int64_t now = node_end_ - 10 * kDay + 60;
  auto found = ExpiringCertificates(files_, now, kCertExpiryWarningDays * kDay);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].path, files_.cert);
  EXPECT_EQ(found[0].common_name, kNodeCommonName);
  EXPECT_EQ(found[0].seconds_left, 10 * kDay - 60);
  EXPECT_TRUE(ExpiringCertificates(files_, now, 9 * kDay).empty());
  // Past the CA's end, both; a file that cannot be read is skipped.
  found = ExpiringCertificates(files_, ca_end_ + 1, kCertExpiryWarningDays * kDay);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, files_.ca_cert);
  EXPECT_LT(found[0].seconds_left, 0);
  EXPECT_LT(found[1].seconds_left, 0);
  files_.cert = dir_ + "/missing.crt";
  EXPECT_EQ(ExpiringCertificates(files_, ca_end_ + 1, kDay).size(), 1u);
}

// Logged once per whole day left, then once as expired.
TEST_F(CertExpiryTest, TheMonitorLogsOncePerDayLeftAndOnceExpired) {
  log::LogCapture capture;
  std::atomic<int64_t> now{node_end_ - 5 * kDay - 100};
  {
    CertificateExpiryMonitor monitor(
        {.files = files_, .period = std::chrono::hours(1), .now_unix = [&] { return now.load(); }});
    EXPECT_EQ(monitor.CheckNow().size(), 1u);  // still 5 days: not logged again
    now += kDay;
    EXPECT_EQ(monitor.CheckNow().size(), 1u);  // 4 days
    now = node_end_ + 1;
    EXPECT_EQ(monitor.CheckNow().size(), 1u);  // expired
    EXPECT_EQ(monitor.CheckNow().size(), 1u);
  }
  const std::string contents = capture.Stop();
  const auto count = [&](const std::string& word) { return log::Occurrences(contents, word); };
  EXPECT_EQ(count("tls.certificate_expires_soon"), 2u) << contents;
  EXPECT_EQ(count("\"days_left\":5"), 1u) << contents;
  EXPECT_EQ(count("\"days_left\":4"), 1u) << contents;
  EXPECT_EQ(count("tls.certificate_expired"), 1u) << contents;
  EXPECT_EQ(count("node.crt"), 3u) << contents;
}

}  // namespace
}  // namespace shoal::security
