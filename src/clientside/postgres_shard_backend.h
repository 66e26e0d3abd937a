#pragma once

// PostgresShardBackend: a shard that is one PostgreSQL table (paper 000 §3: shard an existing
// database that knows nothing of sharding). Table layout:
//   pk TEXT COLLATE "C" PRIMARY KEY, version BIGINT, tombstone BOOLEAN, body JSONB
// Each ShardBackend operation is one autocommit statement in one round trip (no BEGIN/COMMIT, no
// read before a write), atomic on its row: Insert and the
// upserts are INSERT … ON CONFLICT (pk) DO NOTHING / DO UPDATE [WHERE condition], the
// conditional operations add the condition to the WHERE clause, and "no row affected" is the
// DUPLICATE or NOT_FOUND of §5. Queries are ORDER BY pk (bytewise) with a keyset cursor; filters
// are translated to JSONB path expressions with the comparison rules of predicate.h. Bodies come
// back as PostgreSQL prints JSONB (normalized spacing and key order). With or_version the
// statement itself turns the non-matching documents of that version into shadow rows (the body
// is not sent). Every statement is prepared on a connection at its first use there, with the
// condition, the cursor and the limit as parameters (a query's filter is in its text, so each
// distinct filter is one more statement); past max_prepared_statements per connection the
// statements run unprepared, still in one round trip.
//
// libpqxx throws; no exception leaves this class: every call converts them to a Status
// (connection failures: kUnavailable; SQL errors: kInternal).
//
// Thread-safe: a pool of connections, one per concurrent call.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/clientside/shard_backend.h"

namespace shoal::clientside {

struct PostgresShardOptions {
  std::string conninfo{};  // libpq connection string
  std::string table{};     // [a-z0-9_]+; created if missing
  size_t max_idle_connections = 32;
  size_t max_prepared_statements = 256;  // per connection
};

class PostgresShardBackend final : public ShardBackend {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<PostgresShardBackend>> Create(
      PostgresShardOptions options);
  ~PostgresShardBackend() override;

  [[nodiscard]] std::string Name() const override { return "postgres:" + options_.table; }
  [[nodiscard]] bool RemoteCalls() const override { return true; }
  [[nodiscard]] Status Insert(const ShardDocument& d) override;
  [[nodiscard]] Status Delete(std::string_view primary_key) override;
  [[nodiscard]] Status DeleteIf(std::string_view primary_key,
                                const ShardCondition& condition) override;
  [[nodiscard]] Status Update(const ShardDocument& d) override;
  [[nodiscard]] Status UpdateIf(const ShardDocument& d, const ShardCondition& condition) override;
  [[nodiscard]] Status Upsert(const ShardDocument& d) override;
  [[nodiscard]] Status UpsertIf(const ShardDocument& d, const ShardCondition& condition) override;
  [[nodiscard]] StatusOr<ShardDocument> Get(std::string_view primary_key) override;
  [[nodiscard]] StatusOr<ShardPage> Query(const ShardQuery& query) override;

  // Drops the table (tests and benchmarks).
  [[nodiscard]] Status DropTable();
  // Statements sent to the server so far, preparations included: each is one round trip
  // (connection setup is not counted).
  [[nodiscard]] uint64_t round_trips() const {
    return round_trips_.load(std::memory_order_relaxed);
  }

 private:
  class Lease;
  struct Connection;  // a libpqxx connection
  explicit PostgresShardBackend(PostgresShardOptions options);
  // A document write; `sql` takes $1 pk, $2 version, $3 tombstone, $4 body and, with a
  // condition, $5 and $6 (ConditionSql). Returns rows hit.
  [[nodiscard]] StatusOr<size_t> Write(const std::string& sql, const ShardDocument& d,
                                       const std::optional<ShardCondition>& condition);

  const PostgresShardOptions options_;
  std::atomic<uint64_t> round_trips_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
};

}  // namespace shoal::clientside
