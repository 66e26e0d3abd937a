// `shoal user add|remove|list|set-password|grant`: the cluster's users and roles through the
// coordinator's Admin RPC (docs/security.md, "Users and roles"); admin only. A password is never
// taken on the command line (other users see it in the process list): it is read from stdin
// (--password-stdin, one line), asked twice without echo on a terminal, or generated and
// printed once (--generate-password).

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "proto/shoal.pb.h"
#include "src/net/admin_client.h"
#include "src/security/passwords.h"
#include "src/security/users.h"
#include "tools/shoal/net_commands.h"
#include "tools/shoal/password_input.h"

namespace shoal::tools {
namespace {

constexpr transport::Micros kUserAdminTimeout = 10'000'000;

struct UserFlags {
  std::string cluster{kDefaultCluster};
  std::string name{};
  std::string role{};
  bool password_stdin = false;
  bool generate_password = false;
  bool no_password = false;
  bool json = false;
  ClientSecurityFlags security;
};

// The password the flags ask for: "" for --no-password (a certificate-only user).
StatusOr<std::string> PasswordOf(const UserFlags& flags) {
  const int ways =
      int{flags.password_stdin} + int{flags.generate_password} + int{flags.no_password};
  if (ways > 1) {
    return InvalidArgumentError(
        "give one of --password-stdin, --generate-password and --no-password");
  }
  if (flags.no_password) return std::string();
  std::string password;
  if (flags.generate_password) {
    password = security::GeneratePassword();
  } else if (flags.password_stdin) {
    SHOAL_ASSIGN_OR_RETURN(password, ReadPasswordLine());
  } else {
    if (::isatty(STDIN_FILENO) == 0) {
      return InvalidArgumentError(
          "no terminal to ask for the password: give --password-stdin, --generate-password or "
          "--no-password");
    }
    SHOAL_ASSIGN_OR_RETURN(password, PromptPassword("password: "));
    SHOAL_ASSIGN_OR_RETURN(const std::string again, PromptPassword("again: "));
    if (again != password) return InvalidArgumentError("the two passwords differ");
  }
  SHOAL_RETURN_IF_ERROR(security::CheckPassword(password));
  return password;
}

void PrintUsers(const wire::AdminResponse& reply, bool json) {
  if (json) {
    nlohmann::json users = nlohmann::json::array();
    for (const auto& user : reply.users()) {
      users.push_back(
          {{"name", user.name()}, {"role", user.role()}, {"password", user.has_password()}});
    }
    std::printf(
        "%s\n",
        nlohmann::json{{"users", users}, {"version", reply.users_version()}}.dump().c_str());
    return;
  }
  std::printf("%-24s %-6s %s\n", "USER", "ROLE", "AUTHENTICATES WITH");
  for (const auto& user : reply.users()) {
    std::printf("%-24s %-6s %s\n", user.name().c_str(), user.role().c_str(),
                user.has_password() ? "password or certificate" : "certificate");
  }
}

int RunUser(const UserFlags& flags, const wire::AdminRequest& request) {
  auto runtime = StartCommandRuntime(flags.cluster, flags.security);
  if (!runtime.ok()) return FailCommand(runtime.status());
  auto outcome = net::AdminWithRepeat(**runtime, request, {.call_timeout = kUserAdminTimeout});
  if (!outcome.ok()) return FailCommand(outcome.status());
  PrintUsers(outcome->response, flags.json);
  return 0;
}

CLI::App* UserCommand(CLI::App* parent, const char* name, const char* description,
                      const std::shared_ptr<UserFlags>& flags, bool takes_name) {
  CLI::App* command = parent->add_subcommand(name, description);
  AddClusterOption(command, &flags->cluster);
  if (takes_name) command->add_option("name", flags->name, "The user")->required();
  command->add_flag("--json", flags->json, "Print one JSON object");
  AddClientSecurityOptions(command, &flags->security);
  return command;
}

void AddPasswordOptions(CLI::App* command, UserFlags* flags) {
  command->add_flag("--password-stdin", flags->password_stdin,
                    "Read the password from the first line of stdin");
  command->add_flag("--generate-password", flags->generate_password,
                    "Generate a password and print it once");
  command->add_flag("--no-password", flags->no_password,
                    "No password: the user authenticates with its client certificate only");
}

// Runs a change whose password field is `password` (inside `request`); a generated password is
// printed once it is stored.
int RunWithPassword(const UserFlags& flags, const wire::AdminRequest& request,
                    std::string* password) {
  auto chosen = PasswordOf(flags);
  if (!chosen.ok()) return FailCommand(chosen.status());
  *password = *chosen;
  const std::string generated = flags.generate_password ? *password : std::string();
  const int code = RunUser(flags, request);
  if (code == 0 && !generated.empty()) {
    // The label on stderr, the password alone on stdout (for a script to capture).
    std::fflush(stdout);
    std::fprintf(stderr, "password of %s (shown once):\n", flags.name.c_str());
    std::printf("%s\n", generated.c_str());
    std::fflush(stdout);
  }
  return code;
}

}  // namespace

void AddUserCommands(CLI::App& app) {
  CLI::App* user = app.add_subcommand(
      "user", "Users and roles (read, write, admin) of a cluster; admin only (docs/security.md)");
  user->require_subcommand(1);

  auto add = std::make_shared<UserFlags>();
  CLI::App* a = UserCommand(user, "add", "Add a user with a role and a password", add, true);
  a->add_option("--role", add->role, "read, write or admin")->required();
  AddPasswordOptions(a, add.get());
  a->callback([add] {
    wire::AdminRequest request;
    auto* body = request.mutable_add_user();
    body->set_name(add->name);
    body->set_role(add->role);
    std::exit(RunWithPassword(*add, request, body->mutable_password()));
  });

  auto remove = std::make_shared<UserFlags>();
  UserCommand(user, "remove", "Remove a user: every process refuses it within 5 s", remove, true)
      ->callback([remove] {
        wire::AdminRequest request;
        request.mutable_remove_user()->set_name(remove->name);
        std::exit(RunUser(*remove, request));
      });

  auto list = std::make_shared<UserFlags>();
  UserCommand(user, "list", "The users, their roles and how they authenticate (never a hash)", list,
              false)
      ->callback([list] {
        wire::AdminRequest request;
        request.mutable_list_users();
        std::exit(RunUser(*list, request));
      });

  auto password = std::make_shared<UserFlags>();
  CLI::App* p = UserCommand(user, "set-password", "Replace a user's password", password, true);
  AddPasswordOptions(p, password.get());
  p->callback([password] {
    wire::AdminRequest request;
    auto* body = request.mutable_set_password();
    body->set_name(password->name);
    std::exit(RunWithPassword(*password, request, body->mutable_password()));
  });

  auto grant = std::make_shared<UserFlags>();
  CLI::App* g = UserCommand(user, "grant", "Give a user another role", grant, true);
  g->add_option("--role", grant->role, "read, write or admin")->required();
  g->callback([grant] {
    if (auto role = security::ParseRole(grant->role); !role.ok()) {
      std::exit(FailCommand(role.status()));
    }
    wire::AdminRequest request;
    request.mutable_grant_role()->set_name(grant->name);
    request.mutable_grant_role()->set_role(grant->role);
    std::exit(RunUser(*grant, request));
  });
}

}  // namespace shoal::tools
