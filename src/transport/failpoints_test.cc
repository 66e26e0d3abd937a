#include "src/transport/failpoints.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shoal::transport {
namespace {

TEST(FailpointsTest, ParsesCrashAndPause) {
  auto parsed = Failpoints::Parse("a.b=crash:2; c.d=pause:15 ,e=crash");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ((*parsed)->size(), 3u);
  EXPECT_EQ((*parsed)->Hit("c.d"), 15);
  EXPECT_EQ((*parsed)->Hit("c.d"), 15);
  EXPECT_EQ((*parsed)->Hit("unknown"), 0);
  EXPECT_EQ((*parsed)->Hit("a.b"), 0);  // crashes at the second hit only
}

TEST(FailpointsTest, RejectsMalformedValues) {
  for (const char* bad : {"x", "=crash", "x=explode", "x=crash:0", "x=crash:two", "x=pause",
                          "x=pause:0", "x=crash,x=pause:1"}) {
    EXPECT_FALSE(Failpoints::Parse(bad).ok()) << bad;
  }
  auto empty = Failpoints::Parse(" , ;");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->size(), 0u);
}

TEST(FailpointsTest, CrashKillsTheProcessAtTheNthHit) {
  auto parsed = Failpoints::Parse("p=crash:3");
  ASSERT_TRUE(parsed.ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 0; i < 2; ++i) (void)(*parsed)->Hit("p");
    ::_exit(0);  // two hits: alive
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  const pid_t victim = ::fork();
  ASSERT_GE(victim, 0);
  if (victim == 0) {
    for (int i = 0; i < 3; ++i) (void)(*parsed)->Hit("p");
    ::_exit(0);
  }
  ASSERT_EQ(::waitpid(victim, &status, 0), victim);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

}  // namespace
}  // namespace shoal::transport
