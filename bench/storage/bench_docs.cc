#include "bench/storage/bench_docs.h"

#include <fmt/format.h>

#include <algorithm>

namespace shoal::bench {

std::string MakeJsonDocument(size_t target_bytes, uint64_t seed) {
  std::string out = fmt::format(R"({{"id":{},"name":"user-{}","address":{{"zip":{},"city":"c"}})",
                                seed, seed, 10000 + seed % 90000);
  // Fill with an array of small objects, then pad with a string field.
  if (out.size() + 12 < target_bytes) {
    out += R"(,"items":[)";
    bool first = true;
    for (uint64_t i = 0; out.size() + 48 < target_bytes; ++i) {
      if (!first) out += ',';
      first = false;
      out += fmt::format(R"({{"n":{},"w":{:.2f},"t":"tag{}"}})", i, (seed + i) * 0.5, i % 7);
    }
    out += ']';
  }
  out += R"(,"pad":")";
  while (out.size() + 2 < target_bytes) out += static_cast<char>('a' + out.size() % 26);
  out += "\"}";
  return out;
}

std::string BenchKey(uint64_t i) { return fmt::format("key{:012}", i); }

std::string FlatValue(int bytes) {
  std::string text = R"({"v":")";
  for (int i = 0; i < std::max(1, bytes - 8); ++i) text.push_back(static_cast<char>('a' + i % 26));
  text += "\"}";
  return text;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace shoal::bench
