#include "tests/fuzz/fuzz_targets.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "src/storage/codec.h"
#include "src/storage/errors.h"
#include "src/storage/json.h"
#include "src/storage/local_directory.h"
#include "src/storage/predicate.h"

namespace shoal::storage::fuzz {
namespace {

void Check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property failed: %s\n", what);
    std::abort();
  }
}

// The deepest nesting of arrays and objects in the valid JSON `body`, counted over its brackets
// outside strings, independently of the parser.
size_t BracketDepth(std::string_view body) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

int FuzzDocumentDecode(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto doc = DecodeDocument(bytes); doc.ok()) {
    const std::string again = EncodeDocument(*doc);
    auto redecoded = DecodeDocument(again);
    Check(redecoded.ok(), "re-encoded document decodes");
    Check(*redecoded == *doc, "document round trip");
    Check(EncodeDocument(*redecoded) == again, "document encoding is stable");
  } else {
    Check(!doc.status().ok() && ReasonOf(doc.status()).has_value(), "decode error has a reason");
  }
  if (auto value = DecodeStoredValue(bytes); value.ok()) {
    const std::string again = EncodeStoredValue(value->version, value->tombstone, value->body);
    Check(again == bytes, "stored value encoding is canonical");
  }
  if (auto key = DecodeStoredKey(bytes); key.ok()) {
    Check(EncodeStoredKey(key->point, key->collection, key->primary_key) == bytes,
          "stored key encoding is canonical");
  }
  if (size >= 5) {
    const std::string meta_key = BucketMetaKey(BucketId(7));
    if (auto entry = DecodeBucketEntry(meta_key, bytes.substr(5)); entry.ok()) {
      auto again = DecodeBucketEntry(meta_key, EncodeBucketEntry(*entry));
      Check(again.ok() && *again == *entry, "bucket entry round trip");
    }
  }
  return 0;
}

int FuzzJsonIntake(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const DocumentLimits limits{.max_body_bytes = 64 * 1024, .max_depth = 16};
  const Status intake = ValidateJsonBody(body, limits);
  if (!intake.ok()) {
    const auto reason = ReasonOf(intake);
    Check(reason == ErrorReason::kInvalidDocument || reason == ErrorReason::kTooLarge,
          "intake errors are invalid-document or too-large");
    return 0;
  }
  Check(BracketDepth(body) <= limits.max_depth, "an accepted body nests at most max_depth deep");
  // Paths taken from the input's first bytes, so the fuzzer can steer them.
  std::string path = "a";
  for (size_t i = 0; i < size && i < 8; ++i) {
    const char c = body[i];
    if ((c >= 'a' && c <= 'z') || c == '.') path.push_back(c);
  }
  while (!path.empty() && path.back() == '.') path.pop_back();
  for (size_t dot = path.find(".."); dot != std::string::npos; dot = path.find("..")) {
    path.erase(dot, 1);
  }
  DocumentFilter filter{{{path, CompareOp::kGe, int64_t{0}},
                         {"b", CompareOp::kNe, std::string("x")},
                         {"c.d", CompareOp::kEq, nullptr}}};
  Check(ValidateFilter(filter).ok(), "generated filter is valid");
  FilterEvaluator evaluator(filter);
  auto matched = evaluator.Matches(body);
  Check(matched.ok(), "an accepted body is never corrupt for the evaluator");
  return 0;
}

}  // namespace shoal::storage::fuzz
