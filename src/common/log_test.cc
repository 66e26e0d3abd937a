#include "src/common/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "src/common/log_capture.h"

namespace shoal::log {
namespace {

TEST(LogTest, JsonLineParsesBackWithTypedFields) {
  const std::string line =
      FormatLine(Format::kJson, "2026-11-22T17:40:01.123Z", Level::kWarning, "node-3", "move.abort",
                 {{"move", uint64_t{7}},
                  {"delta", -2},
                  {"ratio", 0.5},
                  {"forced", true},
                  {"reason", "a \"quoted\"\nreason"}});
  const auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["ts"], "2026-11-22T17:40:01.123Z");
  EXPECT_EQ(parsed["level"], "warning");
  EXPECT_EQ(parsed["proc"], "node-3");
  EXPECT_EQ(parsed["event"], "move.abort");
  EXPECT_EQ(parsed["move"], 7);
  EXPECT_EQ(parsed["delta"], -2);
  EXPECT_EQ(parsed["ratio"], 0.5);
  EXPECT_EQ(parsed["forced"], true);
  EXPECT_EQ(parsed["reason"], "a \"quoted\"\nreason");
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one event, one line";
}

TEST(LogTest, JsonLineSurvivesInvalidUtf8) {
  const std::string bad = "\xff\xfe";
  const std::string line = FormatLine(Format::kJson, "t", Level::kInfo, "p", "e", {{"bytes", bad}});
  EXPECT_TRUE(nlohmann::json::accept(line)) << line;
}

TEST(LogTest, TextLineQuotesOnlyWhatNeedsIt) {
  const std::string line =
      FormatLine(Format::kText, "2026-11-22T17:40:01.123Z", Level::kInfo, "coordinator",
                 "map.commit", {{"epoch", uint64_t{42}}, {"record", "COMMIT b3"}, {"ok", true}});
  EXPECT_EQ(line,
            "2026-11-22T17:40:01.123Z INFO coordinator map.commit epoch=42 record=\"COMMIT b3\" "
            "ok=true");
}

TEST(LogTest, OffUntilConfiguredAndFiltersByLevel) {
  EXPECT_FALSE(Enabled(Level::kError)) << "libraries and tests log nothing by default";
  LogCapture capture(Level::kInfo);  // Configure, to a temporary file in JSON
  Debug("dropped");
  Info("kept", {{"n", 1}});
  Error("kept.too");
  const std::string contents = capture.Stop();  // Disable, and what was written
  Info("after.disable");
  EXPECT_FALSE(Enabled(Level::kError));
  EXPECT_EQ(contents.find("dropped"), std::string::npos);
  EXPECT_EQ(contents.find("after.disable"), std::string::npos);
  EXPECT_NE(contents.find("\"event\":\"kept\""), std::string::npos);
  EXPECT_NE(contents.find("\"event\":\"kept.too\""), std::string::npos);
}

TEST(LogTest, ParsesLevelsAndFormatsAndRejectsOthers) {
  EXPECT_EQ(*ParseLevel("warning"), Level::kWarning);
  EXPECT_EQ(*ParseFormat("json"), Format::kJson);
  EXPECT_EQ(ParseLevel("verbose").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFormat("xml").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::log
