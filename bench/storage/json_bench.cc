// Measures the JSON libraries Shoal could use at the document intake (validation with a depth
// limit and a top-level-object check) and for predicate evaluation (reading one dotted path of a
// stored, already validated body). The numbers and the choice are in docs/results/storage.md.

#include <benchmark/benchmark.h>
#include <rapidjson/document.h>
#include <rapidjson/reader.h>
#include <simdjson.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "bench/storage/bench_docs.h"

namespace {

constexpr size_t kMaxDepth = 64;

// --- intake: validate, check depth <= kMaxDepth and that the top level is an object ---

bool SimdjsonValidate(simdjson::dom::parser& parser, std::string_view body) {
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) return false;
  return root.type() == simdjson::dom::element_type::OBJECT;
}

struct RapidDepthHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RapidDepthHandler> {
  size_t depth = 0;
  bool Default() { return true; }
  bool StartObject() { return ++depth <= kMaxDepth; }
  bool EndObject(rapidjson::SizeType) {
    --depth;
    return true;
  }
  bool StartArray() { return ++depth <= kMaxDepth; }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
};

bool RapidjsonValidate(std::string_view body) {
  if (body.empty()) return false;
  rapidjson::Reader reader;
  RapidDepthHandler handler;
  rapidjson::MemoryStream ms(body.data(), body.size());
  constexpr unsigned kFlags =
      rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag;
  if (reader.Parse<kFlags>(ms, handler).IsError()) return false;
  size_t first = body.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && body[first] == '{';
}

struct NlohmannDepthSax : nlohmann::json_sax<nlohmann::json> {
  size_t depth = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth <= kMaxDepth; }
  bool key(string_t&) override { return true; }
  bool end_object() override {
    --depth;
    return true;
  }
  bool start_array(std::size_t) override { return ++depth <= kMaxDepth; }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

bool NlohmannValidate(std::string_view body) {
  NlohmannDepthSax sax;
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(body.begin(), body.end(), &sax);
  } catch (...) {
    return false;
  }
  size_t first = body.find_first_not_of(" \t\r\n");
  return ok && first != std::string_view::npos && body[first] == '{';
}

void BM_Intake_Simdjson(benchmark::State& state) {
  std::string body = shoal::bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  simdjson::dom::parser parser;
  if (parser.allocate(1 << 20, kMaxDepth) != simdjson::SUCCESS) state.SkipWithError("allocate");
  for (auto _ : state) benchmark::DoNotOptimize(SimdjsonValidate(parser, body));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_Intake_Rapidjson(benchmark::State& state) {
  std::string body = shoal::bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(RapidjsonValidate(body));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_Intake_Nlohmann(benchmark::State& state) {
  std::string body = shoal::bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(NlohmannValidate(body));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

// --- predicate: read the number at "address.zip" of a trusted body ---

void BM_Field_SimdjsonOnDemand(benchmark::State& state) {
  std::string body = shoal::bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  simdjson::padded_string padded(body);
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    simdjson::ondemand::document doc;
    int64_t zip = 0;
    if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
        doc.find_field("address").find_field("zip").get_int64().get(zip) != simdjson::SUCCESS) {
      state.SkipWithError("lookup");
      break;
    }
    benchmark::DoNotOptimize(zip);
  }
}

void BM_Field_Rapidjson(benchmark::State& state) {
  std::string body = shoal::bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    rapidjson::Document doc;
    doc.Parse(body.data(), body.size());
    const auto& zip = doc["address"]["zip"];
    benchmark::DoNotOptimize(zip.GetInt64());
  }
}

void BM_Field_Nlohmann(benchmark::State& state) {
  std::string body = shoal::bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    benchmark::DoNotOptimize(doc["address"]["zip"].get<int64_t>());
  }
}

#define SHOAL_JSON_SIZES Arg(100)->Arg(1024)->Arg(16 * 1024)->Arg(256 * 1024)
BENCHMARK(BM_Intake_Simdjson)->SHOAL_JSON_SIZES;
BENCHMARK(BM_Intake_Rapidjson)->SHOAL_JSON_SIZES;
BENCHMARK(BM_Intake_Nlohmann)->SHOAL_JSON_SIZES;
BENCHMARK(BM_Field_SimdjsonOnDemand)->SHOAL_JSON_SIZES;
BENCHMARK(BM_Field_Rapidjson)->SHOAL_JSON_SIZES;
BENCHMARK(BM_Field_Nlohmann)->SHOAL_JSON_SIZES;

}  // namespace

BENCHMARK_MAIN();
