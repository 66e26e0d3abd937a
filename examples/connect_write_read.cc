// Connects to a running cluster, writes a document and reads it back.
//
//   shoal local --nodes 1 --data /tmp/shoal     # registers its credentials for this user
//   example_connect_write_read shoal://127.0.0.1:7400
//
// Database::Connect finds the client certificate in the credentials file (docs/security.md);
// ConnectOptions::certs_dir names one instead.

#include <cstdio>
#include <memory>

#include "include/shoal/shoal.h"

int main(int argc, char** argv) {
  const char* uri = argc > 1 ? argv[1] : "shoal://127.0.0.1:7400";
  shoal::StatusOr<std::unique_ptr<shoal::Database>> db = shoal::Database::Connect(uri);
  if (!db.ok()) {
    std::fprintf(stderr, "connect %s: %s\n", uri, db.status().ToString().c_str());
    return 1;
  }
  shoal::StatusOr<shoal::Collection> users = (*db)->GetCollection("users");
  if (!users.ok()) {
    std::fprintf(stderr, "collection: %s\n", users.status().ToString().c_str());
    return 1;
  }
  // Upsert creates the collection if it does not exist yet.
  shoal::StatusOr<uint64_t> written = users->Upsert("alice", R"({"name": "Alice", "age": 31})");
  if (!written.ok()) {
    std::fprintf(stderr, "upsert: %s\n", written.status().ToString().c_str());
    return 1;
  }
  shoal::StatusOr<shoal::Document> read = users->Get("alice");
  if (!read.ok()) {
    std::fprintf(stderr, "get: %s\n", read.status().ToString().c_str());
    return 1;
  }
  std::printf("%s = %s (version %llu)\n", read->key.c_str(), read->json.c_str(),
              static_cast<unsigned long long>(read->version));
  return (*db)->Close().ok() ? 0 : 1;
}
