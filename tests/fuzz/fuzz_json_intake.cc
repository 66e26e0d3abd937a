// libFuzzer entry point (SHOAL_BUILD_FUZZERS=ON).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return shoal::storage::fuzz::FuzzJsonIntake(data, size);
}
