#pragma once

// Structured event log of a Shoal process: one line per event, with a timestamp, a level, the
// process's name, an event name and typed fields, as JSON (one object per line, for log
// collectors) or as text (`key=value`, for a terminal):
//
//   {"ts":"2026-11-22T17:40:01.123Z","level":"info","proc":"coordinator","event":"move.commit",
//    "epoch":42,"move":7,"record":"COMMIT b3"}
//   2026-11-22T17:40:01.123Z INFO coordinator move.commit epoch=42 move=7 record="COMMIT b3"
//
// Logging is off until a process calls Configure (the `shoal` server commands do; libraries,
// tests and the deterministic simulation never do), so library code may log freely: a disabled
// Event costs one relaxed atomic load. Event names are dotted, lower case ("node.down",
// "map.commit"); field keys are snake_case. A line is written with one fwrite, so lines of
// concurrent threads never interleave.
//
// Thread-safety: every function is thread-safe; Configure may be called at any time.

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

#include "src/common/status.h"

namespace shoal::log {

enum class Level : uint8_t { kDebug, kInfo, kWarning, kError };
enum class Format : uint8_t { kText, kJson };

// "debug", "info", "warning", "error".
[[nodiscard]] std::string_view ToString(Level level);
[[nodiscard]] StatusOr<Level> ParseLevel(std::string_view text);
// "text", "json".
[[nodiscard]] StatusOr<Format> ParseFormat(std::string_view text);

struct Options {
  Level min_level = Level::kInfo;
  Format format = Format::kText;
  std::string process{};  // "coordinator", "node-3", ...
  FILE* sink = stderr;    // not owned; must outlive logging
};

// Turns logging on (or changes it).
void Configure(const Options& options);
// Turns logging off.
void Disable();
[[nodiscard]] bool Enabled(Level level);

// One field value: text, a signed or unsigned integer, a real number or a flag.
using Value = std::variant<std::string_view, int64_t, uint64_t, double, bool>;

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(std::string_view(v)) {}
  Field(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
  Field(std::string_view k, bool v) : key(k), value(v) {}
  Field(std::string_view k, double v) : key(k), value(v) {}
  template <typename Integer>
  requires std::is_integral_v<Integer> &&
      (!std::is_same_v<Integer, bool>)Field(std::string_view k, Integer v)
      : key(k),
        value(std::is_signed_v<Integer> ? Value(static_cast<int64_t>(v))
                                        : Value(static_cast<uint64_t>(v))) {}

  std::string_view key;
  Value value;
};

// The line of an event, without the trailing newline (exposed for tests).
[[nodiscard]] std::string FormatLine(Format format, std::string_view timestamp, Level level,
                                     std::string_view process, std::string_view event,
                                     std::initializer_list<Field> fields);

// Writes one event if `level` is enabled.
void Event(Level level, std::string_view event, std::initializer_list<Field> fields = {});

inline void Debug(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kDebug, event, fields);
}
inline void Info(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kInfo, event, fields);
}
inline void Warning(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kWarning, event, fields);
}
inline void Error(std::string_view event, std::initializer_list<Field> fields = {}) {
  Event(Level::kError, event, fields);
}

}  // namespace shoal::log
