#include "tools/shoal/local_existing.h"

#include <fmt/format.h>

#include "src/transport/messages.h"

namespace shoal::tools {
namespace {

constexpr transport::Micros kCallTimeout = 10'000'000;

}  // namespace

LocalClusterView ViewOfLocalCluster(const cluster::ShardMap& map, const LocalAsked& asked) {
  LocalClusterView view;
  view.replicas = map.replication_factor();
  view.min_in_sync = map.min_in_sync();
  for (uint32_t i = 1; i <= asked.nodes; ++i) {
    if (!map.HasNode(NodeId(i))) view.not_members.push_back(NodeId(i));
  }
  for (const auto& node : map.nodes()) {
    if (node.id.value() > asked.nodes) view.not_started.push_back(node.id);
  }
  const bool replicas_differ = asked.replicas != 0 && asked.replicas != view.replicas;
  const bool floor_differs = asked.min_in_sync != 0 && asked.min_in_sync != view.min_in_sync;
  if (replicas_differ || floor_differs) {
    // Name what was asked for, and the command that changes the cluster to it.
    const uint32_t k = asked.replicas != 0 ? asked.replicas : view.replicas;
    std::string command = fmt::format("shoal replicas --set {}", k);
    if (asked.min_in_sync != 0) command += fmt::format(" --min-in-sync {}", asked.min_in_sync);
    view.setting_note = fmt::format(
        "setting      this cluster keeps K = {}, min_in_sync {} (chosen when it was created); "
        "--replicas and --min-in-sync shape a new cluster only: `{}` changes this one",
        view.replicas, view.min_in_sync, command);
  }
  return view;
}

StatusOr<LocalDescription> DescribeLocalCluster(net::GrpcRuntime& runtime,
                                                const LocalAsked& asked) {
  SHOAL_ASSIGN_OR_RETURN(auto reply, runtime.Call(transport::Address::Coordinator(),
                                                  transport::GetMapRequest{}, kCallTimeout));
  SHOAL_ASSIGN_OR_RETURN(auto state,
                         transport::BodyAs<transport::GetMapResponse>(std::move(reply)));
  if (state.state.map == nullptr) return UnavailableError("the coordinator has no map yet");
  LocalDescription out;
  out.view = ViewOfLocalCluster(*state.state.map, asked);
  if (!out.view.setting_note.empty()) out.lines.push_back(out.view.setting_note);
  for (NodeId node : out.view.not_members) {
    out.lines.push_back(fmt::format(
        "node {:<7} runs, but is not a member of this cluster: `shoal add-node --id {}` adds it "
        "(copies then move to it)",
        node.value(), node.value()));
  }
  for (NodeId node : out.view.not_started) {
    out.lines.push_back(fmt::format(
        "node {:<7} a member this run did not start (--nodes {}): its copies are missing until "
        "it returns (`shoal local --nodes {}`) or leaves (`shoal remove-node --id {}`)",
        node.value(), asked.nodes, node.value(), node.value()));
  }
  return out;
}

}  // namespace shoal::tools
