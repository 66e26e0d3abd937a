#include "src/clientside/postgres_shard_backend.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <unordered_map>

namespace shoal::clientside {

namespace {

using storage::CompareOp;

// A condition as two parameters, $t (tombstone: -1 any, 0 live, 1 tombstone) and $t+1 (version,
// -1 any), so that each conditional statement is prepared once whatever the condition.
std::string ConditionSql(int t) {
  return fmt::format(
      " AND (${0}::int < 0 OR cur.tombstone = (${0}::int = 1)) AND (${1}::bigint < 0 OR "
      "cur.version = ${1}::bigint)",
      t, t + 1);
}

int TombstoneParam(const ShardCondition& c) {
  if (!c.tombstone.has_value()) return -1;
  return *c.tombstone ? 1 : 0;
}

int64_t VersionParam(const ShardCondition& c) {
  return c.version.has_value() ? static_cast<int64_t>(c.version->value()) : -1;
}

// A JSONB path literal '{"a","b"}' for "a.b".
std::string PathLiteral(pqxx::connection& conn, std::string_view path) {
  std::string array = "{";
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string_view seg =
        path.substr(start, dot == std::string_view::npos ? path.npos : dot - start);
    if (array.size() > 1) array += ',';
    array += '"';
    for (char ch : seg) {
      if (ch == '"' || ch == '\\') array += '\\';
      array += ch;
    }
    array += '"';
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  array += '}';
  return conn.quote(array);
}

std::string JsonLiteral(const storage::FieldValue& v) {
  nlohmann::json j;
  if (std::holds_alternative<bool>(v)) j = std::get<bool>(v);
  if (std::holds_alternative<int64_t>(v)) j = std::get<int64_t>(v);
  if (std::holds_alternative<double>(v)) j = std::get<double>(v);
  if (std::holds_alternative<std::string>(v)) j = std::get<std::string>(v);
  return j.dump();
}

std::string_view SqlOp(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "=";
    case CompareOp::kNe:
      return "<>";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "=";
}

// One predicate with the rules of predicate.h: a missing field fails all but kNe, which holds
// when the field exists with another value; ordering compares numbers with numbers and strings
// with strings (bytewise) only.
std::string PredicateSql(pqxx::connection& conn, const storage::FieldPredicate& p) {
  const std::string at = fmt::format("(body #> {})", PathLiteral(conn, p.path));
  const std::string value = conn.quote(JsonLiteral(p.value)) + "::jsonb";
  if (p.op == CompareOp::kEq) return fmt::format("{} = {}", at, value);
  if (p.op == CompareOp::kNe) return fmt::format("({} IS NOT NULL AND {} <> {})", at, at, value);
  const std::string text = fmt::format("(body #>> {})", PathLiteral(conn, p.path));
  if (std::holds_alternative<std::string>(p.value)) {
    return fmt::format("(CASE WHEN jsonb_typeof({}) = 'string' THEN {} COLLATE \"C\" {} {} END)",
                       at, text, SqlOp(p.op), conn.quote(std::get<std::string>(p.value)));
  }
  return fmt::format("(CASE WHEN jsonb_typeof({}) = 'number' THEN {}::numeric {} {}::numeric END)",
                     at, text, SqlOp(p.op), conn.quote(JsonLiteral(p.value)));
}

// Columns: pk, version, tombstone (true for a shadow row too), body (empty for both).
ShardDocument RowToDocument(const pqxx::row& row) {
  const bool tombstone = row[2].as<bool>();
  return ShardDocument{.primary_key = row[0].as<std::string>(),
                       .body = tombstone ? std::string() : row[3].as<std::string>(),
                       .version = MapVersion(static_cast<uint64_t>(row[1].as<int64_t>())),
                       .tombstone = tombstone};
}

}  // namespace

// A connection and the statements prepared on it (name by SQL text).
struct PostgresShardBackend::Connection {
  explicit Connection(const std::string& conninfo) : conn(conninfo) {}
  pqxx::connection conn;
  std::unordered_map<std::string, std::string> prepared;
  uint64_t next_name = 0;  // names are never reused, even after a failed preparation
};

// Borrows a pooled connection for one call; returns it unless it broke.
class PostgresShardBackend::Lease {
 public:
  explicit Lease(PostgresShardBackend* owner) : owner_(owner) {
    std::lock_guard lock(owner_->mu_);
    if (!owner_->idle_.empty()) {
      conn_ = std::move(owner_->idle_.back());
      owner_->idle_.pop_back();
    }
  }
  ~Lease() {
    if (conn_ == nullptr || broken_) return;
    std::lock_guard lock(owner_->mu_);
    if (owner_->idle_.size() < owner_->options_.max_idle_connections) {
      owner_->idle_.push_back(std::move(conn_));
    }
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // Runs `fn(connection)`, converting every libpqxx exception to a Status.
  template <typename Fn>
  auto Run(Fn&& fn) -> StatusOr<decltype(fn(std::declval<pqxx::connection&>()))> {
    try {
      if (conn_ == nullptr) conn_ = std::make_unique<Connection>(owner_->options_.conninfo);
      return fn(conn_->conn);
    } catch (const pqxx::broken_connection& e) {
      broken_ = true;
      return UnavailableError(fmt::format("{}: {}", owner_->Name(), e.what()));
    } catch (const pqxx::sql_error& e) {
      return InternalError(fmt::format("{}: {} ({})", owner_->Name(), e.what(), e.query()));
    } catch (const std::exception& e) {
      broken_ = true;
      return InternalError(fmt::format("{}: {}", owner_->Name(), e.what()));
    }
  }

  // Runs `sql` with `args` in one round trip (autocommit, no BEGIN/COMMIT): as a prepared
  // statement, prepared on this connection at its first use (one more round trip, once), or
  // unprepared once the connection holds max_prepared_statements.
  template <typename... Args>
  StatusOr<pqxx::result> Exec(const std::string& sql, Args&&... args) {
    return Run([&](pqxx::connection& conn) -> pqxx::result {
      auto it = conn_->prepared.find(sql);
      if (it == conn_->prepared.end() &&
          conn_->prepared.size() < owner_->options_.max_prepared_statements) {
        std::string name = fmt::format("s{}", conn_->next_name++);
        conn.prepare(name, sql);
        conn.prepare_now(name);
        owner_->round_trips_.fetch_add(1, std::memory_order_relaxed);
        it = conn_->prepared.emplace(sql, std::move(name)).first;
      }
      pqxx::nontransaction tx(conn);
      owner_->round_trips_.fetch_add(1, std::memory_order_relaxed);
      if (it == conn_->prepared.end()) return tx.exec_params(sql, std::forward<Args>(args)...);
      return tx.exec_prepared(it->second, std::forward<Args>(args)...);
    });
  }

 private:
  PostgresShardBackend* owner_;
  std::unique_ptr<Connection> conn_;
  bool broken_ = false;
};

PostgresShardBackend::PostgresShardBackend(PostgresShardOptions options)
    : options_(std::move(options)) {}

PostgresShardBackend::~PostgresShardBackend() = default;

StatusOr<std::unique_ptr<PostgresShardBackend>> PostgresShardBackend::Create(
    PostgresShardOptions options) {
  if (options.table.empty()) return InvalidArgumentError("empty table name");
  for (char c : options.table) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return InvalidArgumentError(fmt::format("bad table name {}", options.table));
    }
  }
  std::unique_ptr<PostgresShardBackend> backend(new PostgresShardBackend(std::move(options)));
  Lease lease(backend.get());
  SHOAL_RETURN_IF_ERROR(lease
                            .Run([&](pqxx::connection& conn) {
                              pqxx::nontransaction tx(conn);
                              tx.exec0(fmt::format(
                                  "CREATE TABLE IF NOT EXISTS {} (pk TEXT COLLATE \"C\" PRIMARY "
                                  "KEY, version BIGINT NOT NULL, tombstone BOOLEAN NOT NULL, "
                                  "body JSONB NOT NULL)",
                                  backend->options_.table));
                              return 0;
                            })
                            .status());
  return backend;
}

Status PostgresShardBackend::DropTable() {
  Lease lease(this);
  return lease
      .Run([&](pqxx::connection& conn) {
        pqxx::nontransaction tx(conn);
        tx.exec0(fmt::format("DROP TABLE IF EXISTS {}", options_.table));
        return 0;
      })
      .status();
}

StatusOr<size_t> PostgresShardBackend::Write(const std::string& sql, const ShardDocument& d,
                                             const std::optional<ShardCondition>& condition) {
  Lease lease(this);
  const std::string body = d.tombstone || d.body.empty() ? std::string("{}") : d.body;
  const auto version = static_cast<int64_t>(d.version.value());
  StatusOr<pqxx::result> r = condition.has_value()
                                 ? lease.Exec(sql, d.primary_key, version, d.tombstone, body,
                                              TombstoneParam(*condition), VersionParam(*condition))
                                 : lease.Exec(sql, d.primary_key, version, d.tombstone, body);
  if (!r.ok()) return r.status();
  return static_cast<size_t>(r->affected_rows());
}

namespace {
constexpr std::string_view kValues =
    "INSERT INTO {0} AS cur (pk, version, tombstone, body) VALUES ($1, $2, $3, $4::jsonb) ";
constexpr std::string_view kSet =
    "version = EXCLUDED.version, tombstone = EXCLUDED.tombstone, body = EXCLUDED.body";
constexpr std::string_view kUpdate =
    "UPDATE {0} AS cur SET version = $2, tombstone = $3, body = $4::jsonb WHERE pk = $1";
}  // namespace

Status PostgresShardBackend::Insert(const ShardDocument& d) {
  const std::string sql = fmt::format(
      fmt::runtime(std::string(kValues) + "ON CONFLICT (pk) DO NOTHING"), options_.table);
  SHOAL_ASSIGN_OR_RETURN(size_t rows, Write(sql, d, std::nullopt));
  if (rows == 0) return AlreadyExistsError(fmt::format("duplicate {}", d.primary_key));
  return OkStatus();
}

Status PostgresShardBackend::Delete(std::string_view primary_key) {
  return DeleteIf(primary_key, ShardCondition{});
}

Status PostgresShardBackend::DeleteIf(std::string_view primary_key,
                                      const ShardCondition& condition) {
  Lease lease(this);
  SHOAL_ASSIGN_OR_RETURN(
      pqxx::result r,
      lease.Exec(
          fmt::format("DELETE FROM {} AS cur WHERE pk = $1{}", options_.table, ConditionSql(2)),
          std::string(primary_key), TombstoneParam(condition), VersionParam(condition)));
  if (r.affected_rows() == 0) return NotFoundError(fmt::format("not found {}", primary_key));
  return OkStatus();
}

Status PostgresShardBackend::Update(const ShardDocument& d) {
  return UpdateIf(d, ShardCondition{});
}

Status PostgresShardBackend::UpdateIf(const ShardDocument& d, const ShardCondition& condition) {
  const std::string sql =
      fmt::format(fmt::runtime(std::string(kUpdate)), options_.table) + ConditionSql(5);
  SHOAL_ASSIGN_OR_RETURN(size_t rows, Write(sql, d, condition));
  if (rows == 0) return NotFoundError(fmt::format("not found {}", d.primary_key));
  return OkStatus();
}

Status PostgresShardBackend::Upsert(const ShardDocument& d) {
  const std::string sql = fmt::format(
      fmt::runtime(std::string(kValues) + "ON CONFLICT (pk) DO UPDATE SET " + std::string(kSet)),
      options_.table);
  return Write(sql, d, std::nullopt).status();
}

Status PostgresShardBackend::UpsertIf(const ShardDocument& d, const ShardCondition& condition) {
  const std::string sql =
      fmt::format(fmt::runtime(std::string(kValues) + "ON CONFLICT (pk) DO UPDATE SET " +
                               std::string(kSet) + " WHERE TRUE"),
                  options_.table) +
      ConditionSql(5);
  SHOAL_ASSIGN_OR_RETURN(size_t rows, Write(sql, d, condition));
  if (rows == 0) return AlreadyExistsError(fmt::format("duplicate {}", d.primary_key));
  return OkStatus();
}

StatusOr<ShardDocument> PostgresShardBackend::Get(std::string_view primary_key) {
  Lease lease(this);
  SHOAL_ASSIGN_OR_RETURN(
      pqxx::result r,
      lease.Exec(fmt::format("SELECT pk, version, tombstone, body::text FROM {} WHERE pk = $1",
                             options_.table),
                 std::string(primary_key)));
  if (r.empty()) return NotFoundError(fmt::format("not found {}", primary_key));
  return RowToDocument(r[0]);
}

StatusOr<ShardPage> PostgresShardBackend::Query(const ShardQuery& query) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(query.filter));
  if (query.limit == 0) return InvalidArgumentError("query limit must be >= 1");
  Lease lease(this);
  // The filter is in the statement text (one prepared statement per filter); the cursor and the
  // limit are parameters. `selected` is what the query selects without or_version; the other
  // documents of or_version come back as shadow rows: no body, tombstone column true.
  SHOAL_ASSIGN_OR_RETURN(std::string selected, lease.Run([&](pqxx::connection& conn) {
    std::string match = "TRUE";
    if (!query.filter.empty() || !query.include_tombstones) match += " AND NOT tombstone";
    if (query.version.has_value()) {
      match += fmt::format(" AND version = {}", static_cast<int64_t>(query.version->value()));
    }
    for (const storage::FieldPredicate& p : query.filter.all_of) {
      match += " AND " + PredicateSql(conn, p);
    }
    return fmt::format("COALESCE({}, FALSE)", match);
  }));
  std::string where = selected;
  if (query.or_version.has_value()) {
    where = fmt::format("({} OR version = {})", selected,
                        static_cast<int64_t>(query.or_version->value()));
  }
  if (query.has_after_key) where += " AND pk > $2";
  const std::string sql = fmt::format(
      "SELECT pk, version, tombstone OR NOT {0}, CASE WHEN {0} AND NOT tombstone THEN body::text "
      "ELSE '' END FROM {1} WHERE {2} ORDER BY pk LIMIT $1",
      selected, options_.table, where);
  const auto limit = static_cast<int64_t>(query.limit + 1);
  SHOAL_ASSIGN_OR_RETURN(pqxx::result r, query.has_after_key
                                             ? lease.Exec(sql, limit, query.after_key)
                                             : lease.Exec(sql, limit));
  ShardPage page;
  page.done = r.size() <= query.limit;
  for (size_t i = 0; i < r.size() && i < query.limit; ++i) {
    page.documents.push_back(RowToDocument(r[static_cast<int>(i)]));
  }
  return page;
}

}  // namespace shoal::clientside
