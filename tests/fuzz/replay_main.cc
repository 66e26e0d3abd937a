// Replays the committed corpus of every storage fuzz target, then deterministic mutations of it
// (byte flips, truncations, splices) from a fixed seed, so `make test` exercises the targets
// without libFuzzer.
//
//   storage_fuzz_replay CORPUS_DIR [mutations per input, default 200]
//   storage_fuzz_replay --write-seeds CORPUS_DIR   (regenerates the document_decode seeds)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "src/common/random.h"
#include "src/storage/codec.h"
#include "src/storage/local_directory.h"
#include "tests/fuzz/fuzz_targets.h"

namespace {

using Target = int (*)(const uint8_t*, size_t);

struct NamedTarget {
  const char* name;
  Target fn;
};

void Run(Target fn, const std::string& input) {
  fn(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(shoal::Random& rng, const std::string& input, const std::string& other) {
  std::string out = input;
  switch (rng.Uniform(4)) {
    case 0:  // flip bytes
      for (uint64_t n = rng.Range(1, 4); n > 0 && !out.empty(); --n) {
        out[rng.Uniform(out.size())] = static_cast<char>(rng.Uniform(256));
      }
      break;
    case 1:  // truncate
      out.resize(out.empty() ? 0 : rng.Uniform(out.size()));
      break;
    case 2:  // splice with another input
      out = out.substr(0, out.empty() ? 0 : rng.Uniform(out.size() + 1)) +
            other.substr(other.empty() ? 0 : rng.Uniform(other.size()));
      break;
    default:  // insert a byte
      out.insert(out.empty() ? 0 : rng.Uniform(out.size() + 1), 1,
                 static_cast<char>(rng.Uniform(256)));
      break;
  }
  return out;
}

int WriteSeeds(const std::filesystem::path& corpus) {
  using shoal::storage::Document;
  const std::filesystem::path dir = corpus / "document_decode";
  std::filesystem::create_directories(dir);
  const Document docs[] = {
      {.collection = shoal::CollectionId(1), .primary_key = "k", .body = "{}", .version = 1},
      {.collection = shoal::CollectionId(7),
       .primary_key = "user:42",
       .body = R"({"name":"ann","n":[1,2,{"x":null}]})",
       .version = 123456789},
      {.collection = shoal::CollectionId(0xFFFFFFFE),
       .primary_key = std::string(200, '\xff'),
       .version = ~0ull,
       .tombstone = true},
  };
  int n = 0;
  auto write = [&](const std::string& bytes) {
    std::ofstream(dir / ("seed-" + std::to_string(n++)), std::ios::binary) << bytes;
  };
  for (const Document& d : docs) {
    write(shoal::storage::EncodeDocument(d));
    write(shoal::storage::EncodeStoredValue(d.version, d.tombstone, d.body));
  }
  write(std::string(5, 'b') +
        shoal::storage::EncodeBucketEntry({.id = shoal::BucketId(7),
                                           .range = shoal::storage::PointRange::From(99),
                                           .state = shoal::storage::BucketState::kLeaving}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") return WriteSeeds(argv[2]);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [mutations]\n", argv[0]);
    return 2;
  }
  const int mutations = argc > 2 ? std::atoi(argv[2]) : 200;
  const NamedTarget targets[] = {
      {"document_decode", shoal::storage::fuzz::FuzzDocumentDecode},
      {"json_intake", shoal::storage::fuzz::FuzzJsonIntake},
  };
  for (const NamedTarget& target : targets) {
    const std::filesystem::path dir = std::filesystem::path(argv[1]) / target.name;
    std::vector<std::string> inputs;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (inputs.empty()) {
      std::fprintf(stderr, "no corpus in %s\n", dir.c_str());
      return 1;
    }
    shoal::Random rng(20240601);
    size_t runs = 0;
    for (const std::string& input : inputs) {
      Run(target.fn, input);
      ++runs;
      for (int i = 0; i < mutations; ++i) {
        Run(target.fn, Mutate(rng, input, inputs[rng.Uniform(inputs.size())]));
        ++runs;
      }
    }
    std::printf("%s: %zu corpus inputs, %zu runs\n", target.name, inputs.size(), runs);
  }
  return 0;
}
