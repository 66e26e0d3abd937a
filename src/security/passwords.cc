#include "src/security/passwords.h"

#include <fmt/format.h>
#include <sodium.h>

#include <cassert>
#include <cstdlib>
#include <string>

namespace shoal::security {
namespace {

inline constexpr std::string_view kArgon2idPrefix = "$argon2id$";

// sodium_init is thread-safe and idempotent; a failure leaves no safe randomness or hashing,
// so nothing can go on.
void InitSodiumOnce() {
  static const bool initialized = [] {
    if (sodium_init() < 0) {
      fmt::print(stderr, "fatal: libsodium failed to initialize\n");
      std::abort();
    }
    return true;
  }();
  (void)initialized;
}

}  // namespace

Status CheckPassword(std::string_view password) {
  if (password.size() < kMinPasswordBytes || password.size() > kMaxPasswordBytes) {
    return InvalidArgumentError(fmt::format("a password has {} to {} bytes, not {}",
                                            kMinPasswordBytes, kMaxPasswordBytes, password.size()));
  }
  if (password.find_first_of(std::string_view("\0\n\r", 3)) != std::string_view::npos) {
    return InvalidArgumentError("a password may not hold a NUL or a line break");
  }
  return OkStatus();
}

StatusOr<std::string> HashPassword(std::string_view password, PasswordCost cost) {
  SHOAL_RETURN_IF_ERROR(CheckPassword(password));
  InitSodiumOnce();
  std::string hash(crypto_pwhash_STRBYTES, '\0');
  if (crypto_pwhash_str_alg(hash.data(), password.data(), password.size(), cost.passes,
                            cost.memory_bytes, crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return ResourceExhaustedError(
        fmt::format("hashing a password needs {} KiB of memory, which is not available",
                    cost.memory_bytes >> 10));
  }
  hash.resize(hash.find('\0'));
  return hash;
}

Status VerifyPassword(std::string_view password, std::string_view hash) {
  SHOAL_RETURN_IF_ERROR(CheckPasswordHash(hash));
  if (password.size() > kMaxPasswordBytes) return UnauthenticatedError("wrong user or password");
  InitSodiumOnce();
  const std::string terminated(hash);  // crypto_pwhash_str_verify reads a C string
  if (crypto_pwhash_str_verify(terminated.c_str(), password.data(), password.size()) != 0) {
    return UnauthenticatedError("wrong user or password");
  }
  return OkStatus();
}

const StatusOr<std::string>& DummyPasswordHash() {
  // Thread-safe static initialization: every caller waits for the one hash.
  static const StatusOr<std::string> hash = HashPassword(GeneratePassword());
  return hash;
}

Status CheckPasswordHash(std::string_view hash) {
  if (!hash.starts_with(kArgon2idPrefix) || hash.size() >= crypto_pwhash_STRBYTES ||
      hash.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("a password hash must be an encoded Argon2id hash ($argon2id$...)");
  }
  return OkStatus();
}

std::string GeneratePassword() {
  InitSodiumOnce();
  unsigned char bytes[kGeneratedPasswordChars * 3 / 4];
  randombytes_buf(bytes, sizeof(bytes));
  std::string text(
      sodium_base64_ENCODED_LEN(sizeof(bytes), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(text.data(), text.size(), bytes, sizeof(bytes),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  sodium_memzero(bytes, sizeof(bytes));
  text.resize(kGeneratedPasswordChars);
  return text;
}

std::string PasswordDigest(std::string_view key, std::string_view password) {
  assert(key.size() == kPasswordDigestKeyBytes);
  InitSodiumOnce();
  std::string digest(crypto_generichash_BYTES, '\0');
  crypto_generichash(reinterpret_cast<unsigned char*>(digest.data()), digest.size(),
                     reinterpret_cast<const unsigned char*>(password.data()), password.size(),
                     reinterpret_cast<const unsigned char*>(key.data()), key.size());
  return digest;
}

std::string NewPasswordDigestKey() {
  InitSodiumOnce();
  std::string key(kPasswordDigestKeyBytes, '\0');
  randombytes_buf(key.data(), key.size());
  return key;
}

}  // namespace shoal::security
