// The generic search of the interleaving explorer (interleaving_explorer.h, "the generic
// search"): choice sequences, their text form, and the depth-first search by replay. The move
// harness it drives is in interleaving_explorer.cc.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "tests/sim/interleaving_explorer.h"

namespace shoal::sim {

uint32_t ChoiceSequence::Choose(uint32_t alternatives) {
  const size_t index = taken_.size();
  uint32_t choice = index < prefix_.size() ? prefix_[index] : 0;
  if (choice >= alternatives) {
    consistent_ = false;
    choice = 0;
  }
  taken_.push_back(choice);
  widths_.push_back(alternatives);
  return choice;
}

std::string FormatChoices(const std::vector<uint32_t>& choices) {
  std::string out;
  for (uint32_t c : choices) {
    if (!out.empty()) out.push_back(',');
    out += std::to_string(c);
  }
  return out.empty() ? "-" : out;
}

std::vector<uint32_t> ParseChoices(std::string_view text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string_view::npos) end = text.size();
    uint32_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + at, text.data() + end, value);
    if (ec == std::errc() && ptr == text.data() + end) out.push_back(value);
    at = end + 1;
  }
  return out;
}

ExploreStats ExploreChoices(const std::function<std::string(ChoiceSequence&)>& run,
                            uint64_t max_runs) {
  ExploreStats stats;
  std::vector<uint32_t> prefix;
  std::vector<uint32_t> expected_widths;  // of the choice points the prefix replays
  while (stats.runs < max_runs) {
    ChoiceSequence sequence(prefix);
    const std::string failure = run(sequence);
    ++stats.runs;
    const auto& taken = sequence.taken();
    const auto& widths = sequence.widths();
    stats.max_depth = std::max(stats.max_depth, taken.size());
    if (!failure.empty()) {
      stats.failure = fmt::format("{} [choices {}]", failure, FormatChoices(taken));
      return stats;
    }
    const bool replayed =
        sequence.consistent() && widths.size() >= expected_widths.size() &&
        std::equal(expected_widths.begin(), expected_widths.end(), widths.begin());
    if (!replayed) {
      stats.failure = fmt::format("the replay of choices {} diverged from the recorded run",
                                  FormatChoices(prefix));
      return stats;
    }
    // Backtrack to the deepest choice point with an alternative not yet tried.
    size_t depth = taken.size();
    while (depth > 0 && taken[depth - 1] + 1 >= widths[depth - 1]) --depth;
    if (depth == 0) {
      stats.complete = true;
      return stats;
    }
    prefix.assign(taken.begin(), taken.begin() + static_cast<std::ptrdiff_t>(depth - 1));
    prefix.push_back(taken[depth - 1] + 1);
    expected_widths.assign(widths.begin(), widths.begin() + static_cast<std::ptrdiff_t>(depth));
  }
  return stats;
}

ExploreStats ExploreHarness(const std::function<std::string(ChoiceSequence&, bool*)>& run,
                            std::string_view label, uint64_t max_runs) {
  uint64_t uncertain_runs = 0;
  ExploreStats stats = ExploreChoices(
      [&](ChoiceSequence& choices) {
        bool uncertain = false;
        std::string failure = run(choices, &uncertain);
        if (uncertain) ++uncertain_runs;
        return failure;
      },
      max_runs);
  stats.uncertain = uncertain_runs;
  if (!stats.failure.empty()) stats.failure = fmt::format("{}: {}", label, stats.failure);
  return stats;
}

}  // namespace shoal::sim
