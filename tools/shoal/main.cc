// The one `shoal` binary: every user-facing command is a subcommand.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/shoal/clientside_demo.h"
#include "tools/shoal/demo.h"
#include "tools/shoal/hotspot_demo.h"
#include "tools/shoal/net_commands.h"
#include "tools/shoal/partition_sim.h"
#include "tools/shoal/sim_command.h"

namespace {

// Edits (insert, delete, replace) that turn `a` into `b`.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The first word of a level that has commands must name one; CLI11 would answer a mistyped
// one with "A subcommand is required". The error names the word, the nearest command when one
// is close (two edits, or a prefix), and where the list is. Words after an option are not
// checked: the option may take them as its value.
std::optional<std::string> UnknownCommand(CLI::App& app, int argc, char** argv) {
  CLI::App* level = &app;
  std::string path = "shoal";
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.empty() || word.front() == '-') return std::nullopt;
    const std::vector<CLI::App*> commands =
        level->get_subcommands([](const CLI::App*) { return true; });
    if (commands.empty()) return std::nullopt;
    const auto found = std::find_if(commands.begin(), commands.end(),
                                    [&](const CLI::App* c) { return c->get_name() == word; });
    if (found != commands.end()) {
      level = *found;
      path += " " + (*found)->get_name();
      continue;
    }
    std::string nearest;
    size_t best = 3;
    for (const CLI::App* command : commands) {
      const std::string& name = command->get_name();
      const size_t distance = name.starts_with(word) ? 1 : EditDistance(word, name);
      if (distance < best) {
        best = distance;
        nearest = name;
      }
    }
    std::string message = "unknown command '" + std::string(word) + "'";
    if (!nearest.empty()) message += "; did you mean '" + nearest + "'?";
    return message + " (" + path + " --help lists the commands)";
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Shoal: an elastic, sharded document and key-value store"};
  app.require_subcommand(1);
  shoal::tools::AddPartitionSimCommand(app);
  shoal::tools::AddDemoCommand(app);
  shoal::tools::AddClientsideDemoCommand(app);
  shoal::tools::AddHotspotDemoCommand(app);
  shoal::tools::AddSimCommand(app);
  shoal::tools::AddServerCommands(app);
  shoal::tools::AddDataCommands(app);
  shoal::tools::AddBatchCommand(app);
  shoal::tools::AddAdminCommands(app);
  shoal::tools::AddUserCommands(app);
  shoal::tools::AddHotspotCommands(app);
  shoal::tools::AddCertsCommands(app);
  if (const auto unknown = UnknownCommand(app, argc, argv); unknown.has_value()) {
    std::fprintf(stderr, "error: %s\n", unknown->c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  try {
    CLI11_PARSE(app, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
