#include "tests/sim/linearizability.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "tests/sim/linearizability_internal.h"

namespace shoal::sim {
namespace {

using internal::Quoted;

std::string StateString(const std::optional<std::string>& state) {
  return state.has_value() ? Quoted(*state) : std::string("absent");
}

// Whether an op of `kind` can report `outcome` in some state.
bool OutcomeFits(OpKind kind, OpOutcome outcome) {
  if (outcome == OpOutcome::kUnknown || outcome == OpOutcome::kOk) return true;
  switch (kind) {
    case OpKind::kInsert:
      return outcome == OpOutcome::kDuplicate;
    case OpKind::kUpdate:
    case OpKind::kDelete:
    case OpKind::kGet:
      return outcome == OpOutcome::kNotFound;
    case OpKind::kUpsert:
      return false;
    case OpKind::kCompareAndSet:
      return outcome == OpOutcome::kConditionFailed;
  }
  return false;
}

// Register states and op arguments are interned: every distinct string gets an id >= 0, so a
// state is one int and comparing values is comparing ids.
constexpr int32_t kAbsent = -1;

struct CompiledOp {
  size_t source;  // index in the caller's history
  OpKind kind;
  OpOutcome outcome;
  int32_t value;
  int32_t expected;
  int32_t read;
  int64_t call_us;
  int64_t return_us;  // kNeverReturned when unknown
  size_t slot;        // bit index among the definite ops, or among the unknown ones
  [[nodiscard]] bool definite() const { return outcome != OpOutcome::kUnknown; }
};

struct Effect {
  OpOutcome observed;  // what the op reports when applied in the state
  int32_t next;        // the state after it
};

// The sequential specification: what `op` does to, and reports in, `state`.
Effect Apply(int32_t state, const CompiledOp& op) {
  const bool present = state != kAbsent;
  switch (op.kind) {
    case OpKind::kInsert:
      return present ? Effect{OpOutcome::kDuplicate, state} : Effect{OpOutcome::kOk, op.value};
    case OpKind::kUpdate:
      return present ? Effect{OpOutcome::kOk, op.value} : Effect{OpOutcome::kNotFound, state};
    case OpKind::kUpsert:
      return {OpOutcome::kOk, op.value};
    case OpKind::kDelete:
      return present ? Effect{OpOutcome::kOk, kAbsent} : Effect{OpOutcome::kNotFound, state};
    case OpKind::kGet:
      return {present ? OpOutcome::kOk : OpOutcome::kNotFound, state};
    case OpKind::kCompareAndSet:
      return state == op.expected ? Effect{OpOutcome::kOk, op.value}
                                  : Effect{OpOutcome::kConditionFailed, state};
  }
  return {OpOutcome::kUnknown, state};
}

// The state after `op` if it may be linearized in `state`, else nullopt. An unknown outcome
// accepts whatever the op would have reported.
std::optional<int32_t> Step(int32_t state, const CompiledOp& op) {
  const Effect effect = Apply(state, op);
  if (op.definite()) {
    if (effect.observed != op.outcome) return std::nullopt;
    if (op.kind == OpKind::kGet && op.outcome == OpOutcome::kOk && op.read != state) {
      return std::nullopt;
    }
  }
  return effect.next;
}

// A configuration of the search without its unknown ops: which definite ops are linearized and
// the register state.
struct ConfigKey {
  std::vector<uint64_t> definite;  // bitset over CompiledOp::slot of definite ops
  int32_t state;

  friend bool operator==(const ConfigKey&, const ConfigKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ConfigKey& key) {
    return H::combine(std::move(h), key.definite, key.state);
  }
};

// One run of the search over one key's history.
//
// The search alternates two kinds of steps. Definite ops are placed by Wing & Gong's depth-first
// search over a time-ordered list of their call and return entries. Between two definite ops the
// search may place a chain of unknown-outcome ops; those chains are enumerated breadth-first per
// search frame, shortest first, so that the dominance rule of Enter() prunes every longer chain
// that ends in a state a shorter one already reached.
class Search {
 public:
  Search(std::span<const Operation> history, const CheckOptions& options)
      : history_(history), options_(options) {}

  CheckReport Run();

 private:
  struct Entry {
    int32_t op;
    bool is_return;
  };

  // A search frame: the configurations reachable after placing the definite op `lifted`, by
  // chains of unknown ops, in breadth-first order; element 0 is the chain of none.
  struct Frame {
    size_t lifted;  // call entry of the definite op placed to reach this frame; head_ for the root
    std::vector<int32_t> states;     // per element: the register state
    std::vector<uint64_t> unknowns;  // per element: unknown_words_ words, the unknown ops placed
    std::vector<int32_t> parents;    // per element: the element it extends (-1 for element 0)
    std::vector<int32_t> added;      // per element: the unknown op it adds (-1 for element 0)
    size_t element = 0;              // the element whose definite successors are being tried
    size_t entry = 0;                // the next definite call entry to try from it
  };

  int32_t Intern(const std::string& value) {
    auto [it, inserted] = ids_.try_emplace(value, static_cast<int32_t>(values_.size()));
    if (inserted) values_.push_back(value);
    return it->second;
  }
  std::optional<std::string> StateValue(int32_t state) const {
    if (state == kAbsent) return std::nullopt;
    return values_[state];
  }

  // Fills ops_; an explanation if the input is malformed.
  std::optional<std::string> Compile();
  void BuildEntries();
  void Lift(size_t call_entry);
  void Unlift(size_t call_entry);
  void Flip(const CompiledOp& op) {
    std::vector<uint64_t>& bits = op.definite() ? current_.definite : current_unknown_;
    bits[op.slot / 64] ^= uint64_t{1} << (op.slot % 64);
  }
  bool HasUnknown(const CompiledOp& op) const {
    return (current_unknown_[op.slot / 64] >> (op.slot % 64)) & 1;
  }
  bool Enter();
  void PushFrame(size_t lifted);
  void SelectElement(const Frame& frame);
  void Expand(Frame& frame, int64_t window_end);
  void RecordBest();
  std::string ExplainFailure() const;

  std::span<const Operation> history_;
  const CheckOptions& options_;

  absl::flat_hash_map<std::string, int32_t> ids_;
  std::vector<std::string> values_;  // by id
  int32_t initial_state_ = kAbsent;
  std::vector<CompiledOp> ops_;
  size_t definite_count_ = 0;
  size_t unknown_count_ = 0;

  // Entries of the definite ops in time order as a circular doubly linked list through head_
  // (== entries_.size()), so that placing an op unlinks its call and return in O(1) and
  // backtracking relinks them. The candidates are the calls before the first return.
  std::vector<Entry> entries_;
  std::vector<size_t> next_;
  std::vector<size_t> prev_;
  std::vector<size_t> return_entry_;  // by op
  size_t head_ = 0;
  // Unknown ops by call time: a candidate once its call is at or before the first return.
  std::vector<int32_t> unknown_by_call_;

  // The configuration being explored, and every one entered so far: for each (definite set,
  // state) the unknown-op sets it was entered with, `unknown_words_` words each.
  ConfigKey current_;
  std::vector<uint64_t> current_unknown_;
  size_t unknown_words_ = 0;
  absl::flat_hash_map<ConfigKey, std::vector<uint64_t>> entered_;
  uint64_t states_entered_ = 0;

  std::vector<Frame> stack_;
  // The longest linearizable prefix seen (most definite ops), as ops in order. Frames below
  // best_agrees_ still match it; best_ends_[k] is where frame k's part of it ends.
  std::vector<int32_t> best_prefix_;
  std::vector<size_t> best_ends_;
  size_t best_agrees_ = 0;
};

std::optional<std::string> Search::Compile() {
  initial_state_ = options_.initial_value.has_value() ? Intern(*options_.initial_value) : kAbsent;
  for (size_t i = 0; i < history_.size(); ++i) {
    const Operation& op = history_[i];
    if (!OutcomeFits(op.kind, op.outcome)) {
      return fmt::format("op #{} {}: {} cannot report {}", i, DebugString(op), ToString(op.kind),
                         ToString(op.outcome));
    }
    const bool definite = op.outcome != OpOutcome::kUnknown;
    if (definite && op.return_us < op.call_us) {
      return fmt::format("op #{} {}: returns before its call", i, DebugString(op));
    }
    if (definite && op.return_us == kNeverReturned) {
      return fmt::format("op #{} {}: a definite outcome needs a return time", i, DebugString(op));
    }
    // An unknown Get changes nothing and promises nothing.
    if (!definite && op.kind == OpKind::kGet) continue;
    const bool writes = op.kind != OpKind::kGet && op.kind != OpKind::kDelete;
    const bool reads = op.kind == OpKind::kGet && op.outcome == OpOutcome::kOk;
    ops_.push_back({
        .source = i,
        .kind = op.kind,
        .outcome = op.outcome,
        .value = writes ? Intern(op.value) : kAbsent,
        .expected = op.kind == OpKind::kCompareAndSet ? Intern(op.expected) : kAbsent,
        .read = reads ? Intern(op.read_value) : kAbsent,
        .call_us = op.call_us,
        .return_us = definite ? op.return_us : kNeverReturned,
        .slot = definite ? definite_count_ : unknown_count_,
    });
    ++(definite ? definite_count_ : unknown_count_);
  }
  return std::nullopt;
}

void Search::BuildEntries() {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!ops_[i].definite()) {
      unknown_by_call_.push_back(static_cast<int32_t>(i));
      continue;
    }
    entries_.push_back({.op = static_cast<int32_t>(i), .is_return = false});
    entries_.push_back({.op = static_cast<int32_t>(i), .is_return = true});
  }
  auto time_of = [this](const Entry& e) {
    const CompiledOp& op = ops_[e.op];
    return e.is_return ? op.return_us : op.call_us;
  };
  // Calls before returns at one instant: intervals that touch are concurrent (see the header).
  std::sort(entries_.begin(), entries_.end(), [&](const Entry& a, const Entry& b) {
    return std::make_tuple(time_of(a), a.is_return, a.op) <
           std::make_tuple(time_of(b), b.is_return, b.op);
  });
  std::stable_sort(unknown_by_call_.begin(), unknown_by_call_.end(),
                   [this](int32_t a, int32_t b) { return ops_[a].call_us < ops_[b].call_us; });
  head_ = entries_.size();
  next_.resize(entries_.size() + 1);
  prev_.resize(entries_.size() + 1);
  return_entry_.assign(ops_.size(), head_);
  for (size_t i = 0; i <= entries_.size(); ++i) {
    next_[i] = i == entries_.size() ? 0 : i + 1;
    prev_[i] = i == 0 ? entries_.size() : i - 1;
    if (i < entries_.size() && entries_[i].is_return) return_entry_[entries_[i].op] = i;
  }
}

void Search::Lift(size_t call_entry) {
  const size_t ret = return_entry_[entries_[call_entry].op];
  next_[prev_[call_entry]] = next_[call_entry];
  prev_[next_[call_entry]] = prev_[call_entry];
  next_[prev_[ret]] = next_[ret];
  prev_[next_[ret]] = prev_[ret];
}

// Exactly undoes the matching Lift; lifts are undone in LIFO order (dancing links).
void Search::Unlift(size_t call_entry) {
  const size_t ret = return_entry_[entries_[call_entry].op];
  next_[prev_[ret]] = ret;
  prev_[next_[ret]] = ret;
  next_[prev_[call_entry]] = call_entry;
  prev_[next_[call_entry]] = call_entry;
}

// Records the current configuration; false if it, or one that dominates it, was entered before.
//
// Lowe's cache prunes exact repeats. Unknown ops add a dominance: (D, s, U') with U' a subset of
// U does at least as well as (D, s, U), since an unknown op never has to be placed and never
// holds back another op, so every completion of the latter completes the former. A dominating
// configuration entered earlier was either explored and failed, or is still being explored and
// will try those completions itself. Without this, every pending unknown op would double the
// configurations, and unknown ops stay pending to the end of the history.
bool Search::Enter() {
  auto [it, inserted] = entered_.try_emplace(current_);
  std::vector<uint64_t>& seen = it->second;
  if (unknown_words_ == 0) {
    if (inserted) ++states_entered_;
    return inserted;
  }
  for (size_t i = 0; i < seen.size(); i += unknown_words_) {
    bool subset = true;
    for (size_t w = 0; w < unknown_words_ && subset; ++w) {
      subset = (seen[i + w] & ~current_unknown_[w]) == 0;
    }
    if (subset) return false;
  }
  // Sets that contain the new one are dominated by it from now on: drop them.
  size_t kept = 0;
  for (size_t i = 0; i < seen.size(); i += unknown_words_) {
    bool superset = true;
    for (size_t w = 0; w < unknown_words_ && superset; ++w) {
      superset = (current_unknown_[w] & ~seen[i + w]) == 0;
    }
    if (superset) continue;
    std::copy_n(seen.begin() + i, unknown_words_, seen.begin() + kept);
    kept += unknown_words_;
  }
  seen.resize(kept);
  seen.insert(seen.end(), current_unknown_.begin(), current_unknown_.end());
  ++states_entered_;
  return true;
}

// Opens a frame on the current configuration, which the caller has entered.
void Search::PushFrame(size_t lifted) {
  Frame& frame = stack_.emplace_back();
  frame.lifted = lifted;
  frame.states.push_back(current_.state);
  frame.unknowns = current_unknown_;
  frame.parents.push_back(-1);
  frame.added.push_back(-1);
  frame.entry = next_[head_];
}

// Makes the frame's current element the current configuration.
void Search::SelectElement(const Frame& frame) {
  current_.state = frame.states[frame.element];
  std::copy_n(frame.unknowns.begin() + frame.element * unknown_words_, unknown_words_,
              current_unknown_.begin());
}

// Appends the configurations one more unknown op away from the current element. Breadth-first,
// so shorter chains are entered before the longer ones they dominate. Unknown ops that would not
// change the state are skipped: the chain without them dominates.
void Search::Expand(Frame& frame, int64_t window_end) {
  SelectElement(frame);
  const int32_t state = current_.state;
  for (int32_t index : unknown_by_call_) {
    const CompiledOp& op = ops_[index];
    if (op.call_us > window_end) break;
    if (HasUnknown(op)) continue;
    const int32_t next = Apply(state, op).next;
    if (next == state) continue;
    current_.state = next;
    Flip(op);
    if (Enter()) {
      frame.states.push_back(next);
      frame.unknowns.insert(frame.unknowns.end(), current_unknown_.begin(), current_unknown_.end());
      frame.parents.push_back(static_cast<int32_t>(frame.element));
      frame.added.push_back(index);
    }
    Flip(op);
    current_.state = state;
  }
}

// Called on reaching a new maximum of placed definite ops: rebuilds best_prefix_ from the
// frames that changed since the last call.
void Search::RecordBest() {
  best_prefix_.resize(best_agrees_ == 0 ? 0 : best_ends_[best_agrees_ - 1]);
  best_ends_.resize(best_agrees_);
  std::vector<int32_t> chain;
  for (size_t k = best_agrees_; k < stack_.size(); ++k) {
    const Frame& frame = stack_[k];
    if (frame.lifted != head_) best_prefix_.push_back(entries_[frame.lifted].op);
    chain.clear();
    for (int32_t e = static_cast<int32_t>(frame.element); frame.parents[e] >= 0;
         e = frame.parents[e]) {
      chain.push_back(frame.added[e]);
    }
    best_prefix_.insert(best_prefix_.end(), chain.rbegin(), chain.rend());
    best_ends_.push_back(best_prefix_.size());
  }
  best_agrees_ = stack_.size();
}

CheckReport Search::Run() {
  CheckReport report;
  if (std::optional<std::string> error = Compile(); error.has_value()) {
    report.result = CheckResult::kInvalidHistory;
    report.explanation = std::move(*error);
    return report;
  }
  if (definite_count_ == 0) return report;
  BuildEntries();

  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  current_ = {.definite = std::vector<uint64_t>((definite_count_ + 63) / 64, 0),
              .state = initial_state_};
  unknown_words_ = (unknown_count_ + 63) / 64;
  current_unknown_.assign(unknown_words_, 0);
  (void)Enter();  // the root
  PushFrame(head_);
  size_t best_depth = 0;
  uint64_t iterations = 0;

  while (true) {
    if ((++iterations & 1023) == 0 && std::chrono::steady_clock::now() >= deadline) {
      report.result = CheckResult::kTimeout;
      report.states_explored = states_entered_;
      report.explanation = fmt::format(
          "timed out after {} ms: at best {} of {} definite ops placed, {} states explored",
          options_.timeout.count(), best_depth, definite_count_, states_entered_);
      return report;
    }
    Frame& frame = stack_.back();
    const size_t entry = frame.entry;
    if (!entries_[entry].is_return) {
      // Try the definite op of this call entry next. The list holds a return while any
      // definite op is pending, so the scan stops at one before reaching head_.
      frame.entry = next_[entry];
      const CompiledOp& op = ops_[entries_[entry].op];
      const std::optional<int32_t> next_state = Step(current_.state, op);
      if (!next_state.has_value()) continue;
      const int32_t state_before = current_.state;
      Flip(op);
      current_.state = *next_state;
      if (!Enter()) {
        Flip(op);
        current_.state = state_before;
        continue;
      }
      Lift(entry);
      PushFrame(entry);
      const size_t depth = stack_.size() - 1;
      if (depth > best_depth) {
        best_depth = depth;
        RecordBest();
      }
      if (depth == definite_count_) break;
      continue;
    }
    // Every definite op from this element has been tried: move on to the next element,
    // generating the elements one unknown op further on the way.
    Expand(frame, ops_[entries_[entry].op].return_us);
    best_agrees_ = std::min(best_agrees_, stack_.size() - 1);
    if (++frame.element < frame.states.size()) {
      SelectElement(frame);
      frame.entry = next_[head_];
      continue;
    }
    // Nothing works from this frame: undo the definite op that opened it.
    const size_t lifted = frame.lifted;
    stack_.pop_back();
    if (stack_.empty()) {
      report.result = CheckResult::kNotLinearizable;
      report.states_explored = states_entered_;
      report.explanation = ExplainFailure();
      return report;
    }
    Unlift(lifted);
    Flip(ops_[entries_[lifted].op]);
    SelectElement(stack_.back());
  }
  report.states_explored = states_entered_;
  return report;
}

std::string Search::ExplainFailure() const {
  constexpr size_t kMaxPrefixShown = 40;
  constexpr size_t kMaxBlockedShown = 20;
  std::string out;
  std::vector<bool> placed(ops_.size(), false);
  int32_t state = initial_state_;
  size_t definite_placed = 0;
  std::vector<std::string> prefix_lines;
  for (size_t i = 0; i < best_prefix_.size(); ++i) {
    const CompiledOp& op = ops_[best_prefix_[i]];
    placed[best_prefix_[i]] = true;
    if (op.definite()) ++definite_placed;
    state = *Step(state, op);
    prefix_lines.push_back(fmt::format("  {:>4}. #{} {}  -> {}\n", i + 1, op.source,
                                       DebugString(history_[op.source]),
                                       StateString(StateValue(state))));
  }
  out += fmt::format(
      "not linearizable: at best {} of {} definite ops placed (plus {} unknown); initial state "
      "{}\n",
      definite_placed, definite_count_, best_prefix_.size() - definite_placed,
      StateString(StateValue(initial_state_)));
  out += "longest linearizable prefix (op, then the state after it):\n";
  if (prefix_lines.empty()) out += "  (empty)\n";
  const size_t skip =
      prefix_lines.size() > kMaxPrefixShown ? prefix_lines.size() - kMaxPrefixShown : 0;
  if (skip > 0) out += fmt::format("  ... {} earlier ops ...\n", skip);
  for (size_t i = skip; i < prefix_lines.size(); ++i) out += prefix_lines[i];

  // The next op must be one called before the earliest outstanding return.
  int64_t earliest_return = kNeverReturned;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!placed[i] && ops_[i].definite()) {
      earliest_return = std::min(earliest_return, ops_[i].return_us);
    }
  }
  std::vector<size_t> blocked;
  size_t unknown_candidates = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (placed[i] || ops_[i].call_us > earliest_return) continue;
    if (ops_[i].definite()) {
      blocked.push_back(i);
    } else {
      ++unknown_candidates;
    }
  }
  std::sort(blocked.begin(), blocked.end(),
            [this](size_t a, size_t b) { return ops_[a].call_us < ops_[b].call_us; });
  out += fmt::format(
      "in state {}, none of these could be placed next (illegal there, or every continuation "
      "fails):\n",
      StateString(StateValue(state)));
  for (size_t i = 0; i < blocked.size() && i < kMaxBlockedShown; ++i) {
    const CompiledOp& op = ops_[blocked[i]];
    out += fmt::format("  #{} {}{}\n", op.source, DebugString(history_[op.source]),
                       Step(state, op).has_value() ? "" : "  (illegal in this state)");
  }
  if (blocked.size() > kMaxBlockedShown) {
    out += fmt::format("  ... and {} more\n", blocked.size() - kMaxBlockedShown);
  }
  if (unknown_candidates > 0) {
    out += fmt::format("  (and {} unknown-outcome ops that could have taken effect)\n",
                       unknown_candidates);
  }
  return out;
}

}  // namespace

CheckReport CheckRegisterHistory(std::span<const Operation> history, const CheckOptions& options) {
  return Search(history, options).Run();
}

}  // namespace shoal::sim
