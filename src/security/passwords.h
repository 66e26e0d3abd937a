#pragma once

// User passwords (docs/security.md, "Users and roles"): stored only as Argon2id hashes made by
// libsodium (crypto_pwhash_str), in the encoded form "$argon2id$v=19$m=...,t=...,p=1$salt$hash"
// that carries its own salt and cost, so a verifier needs nothing else and a cost raised later
// still verifies the old hashes.
//
// Cost: kPasswordOpsLimit passes over kPasswordMemLimit bytes (Argon2id at 19 MiB and 2 passes,
// the minimum OWASP's password storage guidance gives), tens of milliseconds per hash on one
// core. Servers verify a password once and cache the result (security/authenticator.h), never
// per call.
//
// Thread-safety: stateless functions; libsodium is initialized once, on first use, thread-safely.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::security {

inline constexpr size_t kMinPasswordBytes = 8;
// Bounds the work and memory of a request carrying a password, before any hashing.
inline constexpr size_t kMaxPasswordBytes = 256;
inline constexpr uint64_t kPasswordOpsLimit = 2;
inline constexpr size_t kPasswordMemLimit = size_t{19} << 20;
// Characters of a generated password (GeneratePassword): 24 base64url characters, 144 bits.
inline constexpr size_t kGeneratedPasswordChars = 24;

// kInvalidArgument unless `password` is kMinPasswordBytes to kMaxPasswordBytes bytes with no
// NUL and no line break (a password read from a line of stdin could not hold one). The message
// never quotes the password.
[[nodiscard]] Status CheckPassword(std::string_view password);

// The cost of a new hash (a verification reads the cost from the hash). Servers keep the
// default; only the wire fuzz harness lowers it (tests/fuzz/wire_target.cc), so that an input
// costs microseconds instead of a full Argon2id.
struct PasswordCost {
  uint64_t passes = kPasswordOpsLimit;
  size_t memory_bytes = kPasswordMemLimit;
};

// The Argon2id hash of `password` with a fresh random salt (CheckPassword first).
// kResourceExhausted if libsodium cannot get the memory.
[[nodiscard]] StatusOr<std::string> HashPassword(std::string_view password, PasswordCost cost = {});

// OK if `password` matches `hash`; kUnauthenticated if it does not (or is too long to be any
// user's password); kInvalidArgument if `hash` is not an Argon2id hash.
[[nodiscard]] Status VerifyPassword(std::string_view password, std::string_view hash);

// The hash of a random password no one knows, made once per process at the default cost, on
// first use: what a verifier checks a password against when the user does not exist or has no
// password, so that the time of a refusal says nothing of whether the user exists. An error
// (kResourceExhausted from HashPassword) is kept for the process's lifetime.
[[nodiscard]] const StatusOr<std::string>& DummyPasswordHash();

// kInvalidArgument unless `hash` has the shape of an encoded Argon2id hash.
[[nodiscard]] Status CheckPasswordHash(std::string_view hash);

// kGeneratedPasswordChars random base64url characters from libsodium's CSPRNG.
[[nodiscard]] std::string GeneratePassword();

// A keyed BLAKE2b digest of `password` (32 bytes) under `key` (32 bytes): what a cache of
// verified passwords holds instead of the password, cheap to compute per connection.
inline constexpr size_t kPasswordDigestKeyBytes = 32;
[[nodiscard]] std::string PasswordDigest(std::string_view key, std::string_view password);
// kPasswordDigestKeyBytes random bytes.
[[nodiscard]] std::string NewPasswordDigestKey();

}  // namespace shoal::security
