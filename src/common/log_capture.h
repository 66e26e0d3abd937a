#pragma once

// LogCapture: the event log's lines of a stretch of a test, in JSON. Not for production code.

#include <cstdio>
#include <string>

#include "src/common/log.h"

namespace shoal::log {

// Configures the log into a temporary file from construction to Stop (or destruction), at
// `min_level` and above. One at a time: the log is process-wide. Thread-compatible.
class LogCapture {
 public:
  explicit LogCapture(Level min_level = Level::kInfo) : sink_(std::tmpfile()) {
    if (sink_ != nullptr) {
      Configure({.min_level = min_level, .format = Format::kJson, .process = "", .sink = sink_});
    }
  }
  ~LogCapture() { (void)Stop(); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Turns the log off and returns every line written since construction ("" after the first
  // call, or if no temporary file could be made).
  std::string Stop() {
    if (sink_ == nullptr) return {};
    Disable();
    std::rewind(sink_);
    std::string contents;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, sink_)) > 0) contents.append(buffer, n);
    std::fclose(sink_);
    sink_ = nullptr;
    return contents;
  }

 private:
  FILE* sink_;
};

// Times `word` occurs in `text`.
[[nodiscard]] inline size_t Occurrences(const std::string& text, const std::string& word) {
  size_t times = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    ++times;
  }
  return times;
}

}  // namespace shoal::log
