#pragma once

// The storage fuzz targets as plain functions, so that the same code runs under libFuzzer (clang,
// SHOAL_BUILD_FUZZERS=ON) and, in the normal build, under a driver that replays the committed
// corpus plus deterministic mutations of it (storage_fuzz_replay, part of ctest).
//
// Each function aborts the process when a property fails; otherwise it returns 0.

#include <cstddef>
#include <cstdint>

namespace shoal::storage::fuzz {

// Decoders of persisted bytes (document, stored key/value, bucket entry): never crash; whatever
// decodes re-encodes to bytes that decode to the same value.
int FuzzDocumentDecode(const uint8_t* data, size_t size);

// JSON intake: never crashes; a body that passes intake nests within the depth limit (every
// array and object counted, empty or not) and is never reported corrupt by the predicate
// evaluator, whatever the path.
int FuzzJsonIntake(const uint8_t* data, size_t size);

}  // namespace shoal::storage::fuzz
