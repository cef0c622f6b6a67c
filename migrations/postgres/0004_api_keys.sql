-- PostgreSQL dialect of ../0004_api_keys.sql: BYTEA for BLOB, BIGINT for
-- INTEGER (millisecond times overflow PostgreSQL's 32-bit INTEGER), an
-- identity column for AUTOINCREMENT.
-- Text columns are COLLATE "C": byte order, as SQLite compares, which
-- ReplicaKey's "NAME#K" ordering relies on (deployment_store.h), whatever
-- the database's default collation.
-- API keys for dcu-gateway (issue 17), managed with `dcuctl apikey`. Only
-- the SHA-256 of a key is kept: the key itself is shown once, at creation.
CREATE TABLE api_keys (
  name          TEXT COLLATE "C" PRIMARY KEY,
  sha256_hex    TEXT COLLATE "C" NOT NULL UNIQUE,
  -- "*" (every model) or deployment / served model names, comma-separated.
  scope         TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL
);
