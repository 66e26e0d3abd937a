#pragma once

// The wire fuzz target (docs/design/network.md, "Fuzzing the wire"): the first byte of an input
// picks a request type a Shoal server accepts (WireInput), the rest is parsed as that message of
// proto/shoal.proto, and the message is handed to the handlers that serve it: the storage nodes'
// and the coordinator's (envelopes through net::DispatchEnvelope, as GrpcRuntime serves them),
// the coordinator's admin handler, its user administration (process::AnswerUserAdmin, with
// passwords hashed at Argon2id's least cost) and its map watch. They run on an embedded cluster (a
// coordinator and two nodes on a ThreadRuntime in a temporary directory), created at the first
// input and kept for the process's life.
//
// Properties: nothing crashes or trips a sanitizer, and every answer to an envelope decodes as
// a response a client accepts. Inputs that do not parse are ignored.
//
// Thread-safety: FuzzWire is called from one thread at a time.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shoal::net::fuzz {

// The request type of an input: its first byte modulo kWireInputs.
enum class WireInput : uint8_t {
  kCall,      // Envelope of Shoal.Call
  kScan,      // Envelope of Shoal.Scan (its first page)
  kPipeCall,  // PipeCall of Shoal.Pipe
  kAdmin,     // AdminRequest of Shoal.Admin, user administration included
  kWatchMap,  // WatchMapRequest of Shoal.WatchMap
  kResolve,   // ResolveRequest of Shoal.Resolve (no fields: parsed only)
};
inline constexpr uint8_t kWireInputs = 6;

int FuzzWire(const uint8_t* data, size_t size);

// Valid inputs of every WireInput, each a named file's bytes: the seed corpus.
struct WireSeed {
  std::string name;
  std::string bytes;
};
[[nodiscard]] std::vector<WireSeed> WireSeeds();

}  // namespace shoal::net::fuzz
