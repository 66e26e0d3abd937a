#include "tools/shoal/hotspot_demo.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"

namespace shoal::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kCollection = "questions";
constexpr std::string_view kKey = "42";
constexpr std::string_view kField = "votes";
constexpr std::string_view kDeclaration = R"({"votes": {"fold": "sum", "shards": "auto"}})";
constexpr auto kSampleInterval = std::chrono::seconds(1);

struct HotspotDemoOptions {
  int threads = 16;
  int seconds = 5;        // the hot phase
  int cool_seconds = 10;  // the slow phase
  int cool_rate = 4;      // votes per second of the one slow voter
  bool json = false;
};

// What every voter adds to; read by the sampler.
struct Tally {
  std::atomic<uint64_t> acknowledged{0};
  std::atomic<uint64_t> conflicts{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> unknown{0};  // outcome unknown: may or may not be counted
  std::mutex mu;
  std::string first_error;  // guarded by mu
};

struct Sample {
  std::string phase;
  int second = 0;
  double votes_per_s = 0;
  double conflicts_per_s = 0;
  uint32_t active_shards = 0;
  uint32_t retiring_shards = 0;
};

void Vote(Collection& questions, Tally& tally) {
  auto result = questions.Apply(kKey, kField, "1");
  if (result.ok()) {
    tally.acknowledged.fetch_add(1);
    tally.conflicts.fetch_add(result->conflicts);
    return;
  }
  (result.status().code() == StatusCode::kUnknown ? tally.unknown : tally.failed).fetch_add(1);
  std::lock_guard<std::mutex> lock(tally.mu);
  if (tally.first_error.empty()) tally.first_error = result.status().ToString();
}

// Runs `threads` voters for `seconds` (each pausing `pause` between votes) and samples the
// field once a second.
std::vector<Sample> RunPhase(const std::string& phase, Collection& questions, Tally& tally,
                             int threads, int seconds, std::chrono::milliseconds pause,
                             bool print) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> voters;
  voters.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    voters.emplace_back([&questions, &tally, &stop, pause] {
      Collection mine = questions;
      while (!stop.load()) {
        Vote(mine, tally);
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
      }
    });
  }
  std::vector<Sample> samples;
  uint64_t votes = tally.acknowledged.load();
  uint64_t conflicts = tally.conflicts.load();
  auto last = Clock::now();
  for (int second = 1; second <= seconds; ++second) {
    std::this_thread::sleep_until(last + kSampleInterval);
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - last).count();
    last = now;
    const uint64_t votes_now = tally.acknowledged.load();
    const uint64_t conflicts_now = tally.conflicts.load();
    Sample sample{.phase = phase,
                  .second = second,
                  .votes_per_s = static_cast<double>(votes_now - votes) / elapsed,
                  .conflicts_per_s = static_cast<double>(conflicts_now - conflicts) / elapsed,
                  .active_shards = 0,
                  .retiring_shards = 0};
    votes = votes_now;
    conflicts = conflicts_now;
    auto sharding = questions.Sharding(kKey, kField);
    if (sharding.ok()) {
      sample.active_shards = sharding->active_cells;
      sample.retiring_shards = sharding->retiring_cells;
    }
    if (print) {
      std::printf("  %-4s %3d s  %9.0f votes/s  %9.0f conflicts/s  shards %s%s\n", phase.c_str(),
                  second, sample.votes_per_s, sample.conflicts_per_s,
                  sharding.ok() ? std::to_string(sample.active_shards).c_str() : "?",
                  sample.retiring_shards > 0
                      ? fmt::format(" (+{} retiring)", sample.retiring_shards).c_str()
                      : "");
      std::fflush(stdout);
    }
    samples.push_back(std::move(sample));
  }
  stop.store(true);
  for (auto& voter : voters) voter.join();
  return samples;
}

int Fail(const Status& status) {
  std::fprintf(stderr, "hotspot-demo: %s\n", status.ToString().c_str());
  return 1;
}

StatusOr<uint64_t> ReadVotes(Collection& questions) {
  SHOAL_ASSIGN_OR_RETURN(const Document document, questions.Get(kKey));
  const auto body = nlohmann::json::parse(document.json, nullptr, /*allow_exceptions=*/false);
  const auto votes = body.is_object() ? body.find(kField) : body.end();
  if (votes == body.end() || !votes->is_number_unsigned()) {
    return InternalError(fmt::format("no vote count in {}", document.json));
  }
  return votes->get<uint64_t>();
}

int RunHotspotDemo(const HotspotDemoOptions& o) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("shoal-hotspot-demo-{}", getpid());
  std::filesystem::remove_all(dir);
  auto db =
      Database::OpenEmbedded({.data_dir = dir.string(), .nodes = 3, .buckets = 32, .sync = false});
  if (!db.ok()) return Fail(db.status());
  auto questions = (*db)->GetCollection(kCollection);
  if (!questions.ok()) return Fail(questions.status());
  if (Status s = questions->Declare(kDeclaration); !s.ok()) return Fail(s);
  auto inserted = questions->Insert(kKey, R"({"text": "How do you plan to improve education?"})");
  if (!inserted.ok()) return Fail(inserted.status());

  if (!o.json) {
    std::printf("hot-spot demo: %s %s declared %s\n", std::string(kCollection).c_str(),
                std::string(kKey).c_str(), std::string(kDeclaration).c_str());
    std::printf("%d voters for %d s, then 1 voter at %d votes/s for %d s\n", o.threads, o.seconds,
                o.cool_rate, o.cool_seconds);
  }
  auto start = questions->Sharding(kKey, kField);
  const uint32_t initial_shards = start.ok() ? start->active_cells : 0;
  if (!o.json) std::printf("  start         shards %u\n", initial_shards);
  Tally tally;
  std::vector<Sample> samples = RunPhase("hot", *questions, tally, o.threads, o.seconds,
                                         std::chrono::milliseconds(0), !o.json);
  const auto cool = RunPhase("cool", *questions, tally, 1, o.cool_seconds,
                             std::chrono::milliseconds(1000 / std::max(1, o.cool_rate)), !o.json);
  uint32_t peak = 0;
  for (const auto& s : samples) peak = std::max(peak, s.active_shards);
  const uint32_t final_shards = cool.empty() ? peak : cool.back().active_shards;
  samples.insert(samples.end(), cool.begin(), cool.end());

  auto total = ReadVotes(*questions);
  if (!total.ok()) return Fail(total.status());
  const uint64_t acknowledged = tally.acknowledged.load();
  const uint64_t unknown = tally.unknown.load();
  const uint64_t failed = tally.failed.load();
  const uint64_t lost = acknowledged > *total ? acknowledged - *total : 0;
  // Counted without being acknowledged or in doubt: would be as wrong as a lost vote.
  const uint64_t phantom = *total > acknowledged + unknown ? *total - acknowledged - unknown : 0;
  const bool shrank = final_shards < peak;

  if (o.json) {
    nlohmann::json out_samples = nlohmann::json::array();
    for (const auto& s : samples) {
      out_samples.push_back({{"phase", s.phase},
                             {"second", s.second},
                             {"votes_per_s", s.votes_per_s},
                             {"conflicts_per_s", s.conflicts_per_s},
                             {"shards", s.active_shards},
                             {"retiring_shards", s.retiring_shards}});
    }
    nlohmann::json out{{"threads", o.threads},
                       {"votes_acknowledged", acknowledged},
                       {"votes_read", *total},
                       {"conflicts", tally.conflicts.load()},
                       {"failed_votes", failed},
                       {"unknown_votes", unknown},
                       {"lost_votes", lost},
                       {"phantom_votes", phantom},
                       {"initial_shards", initial_shards},
                       {"peak_shards", peak},
                       {"final_shards", final_shards},
                       {"shrank", shrank},
                       {"samples", out_samples}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("summary\n");
    std::printf("  votes acknowledged  %llu\n", static_cast<unsigned long long>(acknowledged));
    std::printf("  total read by Get   %llu\n", static_cast<unsigned long long>(*total));
    std::printf("  conflicts           %llu (retried)\n",
                static_cast<unsigned long long>(tally.conflicts.load()));
    std::printf("  failed votes        %llu\n", static_cast<unsigned long long>(failed));
    if (unknown > 0) {
      std::printf("  unknown outcome     %llu\n", static_cast<unsigned long long>(unknown));
    }
    std::printf("  lost votes          %llu\n", static_cast<unsigned long long>(lost));
    if (phantom > 0) {
      std::printf("  phantom votes       %llu\n", static_cast<unsigned long long>(phantom));
    }
    std::printf("  shards              %u at the start, peak %u, %u at the end (%s)\n",
                initial_shards, peak, final_shards, shrank ? "shrank" : "did not shrink");
  }
  if (!tally.first_error.empty()) {
    std::fprintf(stderr, "  first error: %s\n", tally.first_error.c_str());
  }
  if (Status closed = (*db)->Close(); !closed.ok()) return Fail(closed);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return lost == 0 && phantom == 0 ? 0 : 2;
}

}  // namespace

void AddHotspotDemoCommand(CLI::App& app) {
  auto options = std::make_shared<HotspotDemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "hotspot-demo", "A hot-spot counter: many voters, auto-sharded votes, then one voter");
  cmd->add_option("--threads", options->threads, "Voters of the hot phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--seconds", options->seconds, "Length of the hot phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--cool-seconds", options->cool_seconds, "Length of the slow phase")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  cmd->add_option("--cool-rate", options->cool_rate, "Votes per second of the slow phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", options->json, "Print one JSON object");
  cmd->callback([options]() {
    const int rc = RunHotspotDemo(*options);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace shoal::tools
