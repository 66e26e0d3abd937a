// Replays the committed corpus of every storage fuzz target and deterministic mutations of it
// (replay_driver.h), so `make test` exercises the targets without libFuzzer.
//
//   storage_fuzz_replay CORPUS_DIR [mutations per input, default 200]
//   storage_fuzz_replay --write-seeds CORPUS_DIR   (regenerates the document_decode seeds)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "src/storage/codec.h"
#include "src/storage/local_directory.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/replay_driver.h"

namespace {

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
  const shoal::fuzz::ReplayOptions options{.mutations_per_input =
                                               argc > 2 ? std::atoi(argv[2]) : 200};
  const std::pair<const char*, shoal::fuzz::FuzzTarget> targets[] = {
      {"document_decode", shoal::storage::fuzz::FuzzDocumentDecode},
      {"json_intake", shoal::storage::fuzz::FuzzJsonIntake},
  };
  for (const auto& [name, target] : targets) {
    const shoal::Status replayed =
        shoal::fuzz::ReplayCorpus(name, target, std::filesystem::path(argv[1]) / name, options);
    if (!replayed.ok()) {
      std::fprintf(stderr, "%s\n", replayed.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
