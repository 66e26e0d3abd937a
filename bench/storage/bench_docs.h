#pragma once

// Document bodies for the storage benchmarks: JSON objects of about a target size with a mix of
// strings, numbers, a nested object ("address.zip" is a number) and arrays.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shoal::bench {

// A JSON object of about `target_bytes` bytes (never less than ~90); `seed` varies the values.
[[nodiscard]] std::string MakeJsonDocument(size_t target_bytes, uint64_t seed = 1);

// The primary key of document number `i`.
[[nodiscard]] std::string BenchKey(uint64_t i);

// {"v":"abc..."} of `bytes` bytes (the value bench/net/net_load sends).
[[nodiscard]] std::string FlatValue(int bytes);

// The median of `values` (the upper one of an even count); `values` is not empty.
[[nodiscard]] double Median(std::vector<double> values);

}  // namespace shoal::bench
