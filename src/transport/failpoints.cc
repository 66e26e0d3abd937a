#include "src/transport/failpoints.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace shoal::transport {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A decimal number; 0 when `s` is not one.
uint64_t PositiveNumber(std::string_view s) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return 0;
  return value;
}

}  // namespace

StatusOr<std::unique_ptr<Failpoints>> Failpoints::Parse(std::string_view spec) {
  std::unique_ptr<Failpoints> failpoints(new Failpoints());
  failpoints->spec_ = std::string(Trim(spec));
  while (!spec.empty()) {
    const size_t cut = spec.find_first_of(",;");
    const std::string_view entry = Trim(spec.substr(0, cut));
    spec = cut == std::string_view::npos ? std::string_view() : spec.substr(cut + 1);
    if (entry.empty()) continue;
    const size_t equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      return InvalidArgumentError(fmt::format("failpoint '{}': expected NAME=ACTION", entry));
    }
    const std::string_view name = Trim(entry.substr(0, equals));
    const std::string_view action = Trim(entry.substr(equals + 1));
    const size_t colon = action.find(':');
    const std::string_view verb = action.substr(0, colon);
    const std::string_view argument =
        colon == std::string_view::npos ? std::string_view() : action.substr(colon + 1);
    Point point;
    point.hits = std::make_unique<std::atomic<uint64_t>>(0);
    if (verb == "crash") {
      point.action = FailpointAction::kCrash;
      point.crash_at_hit = argument.empty() ? 1 : PositiveNumber(argument);
      if (point.crash_at_hit == 0) {
        return InvalidArgumentError(
            fmt::format("failpoint '{}': crash:N needs a positive N", entry));
      }
    } else if (verb == "pause") {
      point.action = FailpointAction::kPause;
      point.pause_millis = static_cast<int64_t>(PositiveNumber(argument));
      if (point.pause_millis <= 0) {
        return InvalidArgumentError(
            fmt::format("failpoint '{}': pause:MS needs a positive MS", entry));
      }
    } else {
      return InvalidArgumentError(
          fmt::format("failpoint '{}': the action is crash[:N] or pause:MS", entry));
    }
    if (!failpoints->points_.emplace(std::string(name), std::move(point)).second) {
      return InvalidArgumentError(fmt::format("failpoint {} is named twice", name));
    }
  }
  return failpoints;
}

const Failpoints* Failpoints::FromEnvironment() {
  static const Failpoints* const global = []() -> const Failpoints* {
    const char* value = std::getenv(kEnvironmentVariable);
    if (value == nullptr || *value == '\0') return nullptr;
    auto parsed = Parse(value);
    if (!parsed.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", kEnvironmentVariable,
                   std::string(parsed.status().message()).c_str());
      std::_Exit(2);
    }
    std::fprintf(stderr, "failpoints: %s\n", value);
    return parsed->release();  // lives as long as the process
  }();
  return global;
}

int64_t Failpoints::Hit(std::string_view name) const {
  const auto it = points_.find(name);
  if (it == points_.end()) return 0;
  const Point& point = it->second;
  const uint64_t hit = point.hits->fetch_add(1) + 1;
  if (point.action == FailpointAction::kPause) {
    std::fprintf(stderr, "failpoint %.*s: hit %llu, pause %lld ms\n", static_cast<int>(name.size()),
                 name.data(), static_cast<unsigned long long>(hit),
                 static_cast<long long>(point.pause_millis));
    return point.pause_millis;
  }
  if (hit != point.crash_at_hit) return 0;
  std::fprintf(stderr, "failpoint %.*s: hit %llu, crash\n", static_cast<int>(name.size()),
               name.data(), static_cast<unsigned long long>(hit));
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
  std::_Exit(137);  // not reached
}

}  // namespace shoal::transport
