// The one `shoal` binary: every user-facing command is a subcommand.

#include <CLI/CLI.hpp>

#include "tools/shoal/demo.h"
#include "tools/shoal/partition_sim.h"

int main(int argc, char** argv) {
  CLI::App app{"Shoal: an elastic, sharded document and key-value store"};
  app.require_subcommand(1);
  shoal::tools::AddPartitionSimCommand(app);
  shoal::tools::AddDemoCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
