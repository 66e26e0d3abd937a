// libFuzzer entry point (SHOAL_BUILD_FUZZERS=ON).
#include "tests/fuzz/wire_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return shoal::net::fuzz::FuzzWire(data, size);
}
