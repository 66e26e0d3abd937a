// Writes a few documents, then reads back those matching a filter, page by page.
//
//   example_query shoal://127.0.0.1:7400   (a running cluster: see connect_write_read.cc)

#include <cstdio>
#include <memory>
#include <string>

#include "include/shoal/shoal.h"

namespace {

int Fail(const char* what, const shoal::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* uri = argc > 1 ? argv[1] : "shoal://127.0.0.1:7400";
  auto db = shoal::Database::Connect(uri);
  if (!db.ok()) return Fail("connect", db.status());
  auto cities = (*db)->CreateCollection("cities");
  if (!cities.ok()) return Fail("collection", cities.status());

  const struct {
    const char* key;
    const char* json;
  } kCities[] = {
      {"paris", R"({"country": "FR", "population": 2100000})"},
      {"lyon", R"({"country": "FR", "population": 520000})"},
      {"berlin", R"({"country": "DE", "population": 3600000})"},
      {"bordeaux", R"({"country": "FR", "population": 260000})"},
  };
  for (const auto& city : kCities) {
    if (auto written = cities->Upsert(city.key, city.json); !written.ok()) {
      return Fail("upsert", written.status());
    }
  }

  // French cities above 500,000 people; a page holds at most `limit` documents and a cursor to
  // the next one.
  shoal::QueryOptions query{
      .filter = {{"country", shoal::Op::kEq, R"("FR")"}, {"population", shoal::Op::kGt, "500000"}},
      .limit = 2};
  do {
    auto page = cities->Query(query);
    if (!page.ok()) return Fail("query", page.status());
    for (const shoal::Document& document : page->documents) {
      std::printf("%s %s\n", document.key.c_str(), document.json.c_str());
    }
    query.cursor = page->next_cursor;
  } while (!query.cursor.empty());
  return (*db)->Close().ok() ? 0 : 1;
}
