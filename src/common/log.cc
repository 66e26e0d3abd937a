#include "src/common/log.h"

#include <fmt/format.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>

namespace shoal::log {
namespace {

// The lowest enabled level, or kOff.
constexpr int kOff = 255;
std::atomic<int> min_level{kOff};

std::mutex options_mu;  // guards `options` (the sink may change while another thread logs)
Options options;

// JSON string literal of `text`; invalid UTF-8 is replaced, never thrown on.
std::string Quote(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Text values are bare when they hold nothing a reader could mistake for a separator.
bool NeedsQuotes(std::string_view text) {
  if (text.empty()) return true;
  for (const char c : text) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

std::string ValueText(const Value& value, Format format) {
  return std::visit(
      [format](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          return format == Format::kJson || NeedsQuotes(v) ? Quote(v) : std::string(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(millis / 1000);
  struct tm utc {};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     millis % 1000);
}

}  // namespace

std::string_view ToString(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarning:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "unknown";
}

StatusOr<Level> ParseLevel(std::string_view text) {
  for (const Level level : {Level::kDebug, Level::kInfo, Level::kWarning, Level::kError}) {
    if (text == ToString(level)) return level;
  }
  return InvalidArgumentError(
      fmt::format("log level '{}': expected debug, info, warning or error", text));
}

StatusOr<Format> ParseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  return InvalidArgumentError(fmt::format("log format '{}': expected text or json", text));
}

void Configure(const Options& new_options) {
  std::lock_guard<std::mutex> lock(options_mu);
  options = new_options;
  min_level.store(static_cast<int>(new_options.min_level), std::memory_order_relaxed);
}

void Disable() { min_level.store(kOff, std::memory_order_relaxed); }

bool Enabled(Level level) {
  return static_cast<int>(level) >= min_level.load(std::memory_order_relaxed);
}

std::string FormatLine(Format format, std::string_view timestamp, Level level,
                       std::string_view process, std::string_view event,
                       std::initializer_list<Field> fields) {
  std::string line;
  switch (format) {
    case Format::kJson:
      line = fmt::format(R"({{"ts":"{}","level":"{}","proc":{},"event":{})", timestamp,
                         ToString(level), Quote(process), Quote(event));
      for (const Field& field : fields) {
        line += fmt::format(",{}:{}", Quote(field.key), ValueText(field.value, format));
      }
      line += '}';
      break;
    case Format::kText: {
      std::string upper(ToString(level));
      for (char& c : upper) c = static_cast<char>(c - 'a' + 'A');
      line = fmt::format("{} {} {} {}", timestamp, upper, process, event);
      for (const Field& field : fields) {
        line += fmt::format(" {}={}", field.key, ValueText(field.value, format));
      }
      break;
    }
  }
  return line;
}

void Event(Level level, std::string_view event, std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  std::lock_guard<std::mutex> lock(options_mu);
  std::string line = FormatLine(options.format, Timestamp(), level, options.process, event, fields);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), options.sink);
  std::fflush(options.sink);
}

}  // namespace shoal::log
