// The one `shoal` binary: every user-facing command is a subcommand.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "tools/shoal/clientside_demo.h"
#include "tools/shoal/demo.h"
#include "tools/shoal/hotspot_demo.h"
#include "tools/shoal/net_commands.h"
#include "tools/shoal/partition_sim.h"
#include "tools/shoal/sim_command.h"

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
  try {
    CLI11_PARSE(app, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
