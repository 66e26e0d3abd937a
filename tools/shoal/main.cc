// The one `shoal` binary: every user-facing command is a subcommand.

#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  CLI::App app{"Shoal: an elastic, sharded document and key-value store"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
