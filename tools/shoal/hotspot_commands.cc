// `shoal declare|apply --cluster shoal://HOST:PORT`: sharded fields from the command line
// (paper 003; `shoal get` shows their folded values).

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "include/shoal/shoal.h"
#include "tools/shoal/net_commands.h"

namespace shoal::tools {
namespace {

struct HotspotFlags {
  std::string cluster{kDefaultCluster};
  std::string collection;
  std::string key;
  std::string field;
  std::string json_body;
  bool no_retry = false;
  bool json = false;
  ClientSecurityFlags security;
};

// JSON text as a value (a string when it does not parse, which the server then refuses).
nlohmann::json AsJson(const std::string& text) {
  auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? nlohmann::json(text) : parsed;
}

int RunDeclare(const HotspotFlags& flags) {
  auto db = Database::Connect(flags.cluster, ConnectOptionsOf(flags.security));
  if (!db.ok()) return FailCommand(db.status());
  auto collection = (*db)->GetCollection(flags.collection);
  if (!collection.ok()) return FailCommand(collection.status());
  if (Status declared = collection->Declare(flags.json_body); !declared.ok()) {
    return FailCommand(declared);
  }
  auto schema = collection->Schema();
  if (!schema.ok()) return FailCommand(schema.status());
  if (flags.json) {
    nlohmann::json out{{"collection", flags.collection}, {"schema", AsJson(*schema)}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n", schema->c_str());
  }
  return 0;
}

int RunApply(const HotspotFlags& flags) {
  auto db = Database::Connect(flags.cluster, ConnectOptionsOf(flags.security));
  if (!db.ok()) return FailCommand(db.status());
  auto collection = (*db)->GetCollection(flags.collection);
  if (!collection.ok()) return FailCommand(collection.status());
  auto result = collection->Apply(flags.key, flags.field, flags.json_body,
                                  {.retry_on_conflict = !flags.no_retry});
  if (!result.ok()) return FailCommand(result.status());
  if (flags.json) {
    nlohmann::json out{
        {"key", flags.key}, {"field", flags.field}, {"conflicts", result->conflicts}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("applied, %u conflicts\n", result->conflicts);
  }
  return 0;
}

CLI::App* HotspotCommand(CLI::App& app, const std::string& name, const std::string& help,
                         const std::shared_ptr<HotspotFlags>& flags) {
  CLI::App* cmd = app.add_subcommand(name, help);
  AddClusterOption(cmd, &flags->cluster);
  cmd->add_flag("--json", flags->json, "Print one JSON object");
  AddClientSecurityOptions(cmd, &flags->security);
  cmd->add_option("collection", flags->collection, "Collection (declare creates it if missing)")
      ->required();
  return cmd;
}

}  // namespace

void AddHotspotCommands(CLI::App& app) {
  auto declare = std::make_shared<HotspotFlags>();
  CLI::App* d = HotspotCommand(
      app, "declare",
      "Declare sharded fields, e.g. '{\"votes\": {\"fold\": \"sum\", \"shards\": 10}}'; prints "
      "the collection's schema",
      declare);
  d->add_option("json", declare->json_body, "Declaration (a JSON object)")->required();
  d->callback([declare] { std::exit(RunDeclare(*declare)); });

  auto apply = std::make_shared<HotspotFlags>();
  CLI::App* a = HotspotCommand(
      app, "apply", "Fold an operand into one shard of a sharded field (e.g. 1 for a vote)", apply);
  a->add_option("key", apply->key, "Primary key")->required();
  a->add_option("field", apply->field, "Declared sharded field")->required();
  a->add_option("operand", apply->json_body, "JSON operand")->required();
  a->add_flag("--no-retry", apply->no_retry, "Fail with ABORTED on a conflict instead of retrying");
  a->callback([apply] { std::exit(RunApply(*apply)); });
}

}  // namespace shoal::tools
