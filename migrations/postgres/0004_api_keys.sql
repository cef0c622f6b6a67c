-- PostgreSQL dialect of ../0004_api_keys.sql: BYTEA for BLOB, BIGINT for
-- INTEGER (millisecond times overflow PostgreSQL's 32-bit INTEGER), an
-- identity column for AUTOINCREMENT.
-- API keys for dcu-gateway (issue 17), managed with `dcuctl apikey`. Only
-- the SHA-256 of a key is kept: the key itself is shown once, at creation.
CREATE TABLE api_keys (
  name          TEXT PRIMARY KEY,
  sha256_hex    TEXT NOT NULL UNIQUE,
  -- "*" (every model) or deployment / served model names, comma-separated.
  scope         TEXT NOT NULL,
  created_at_ms BIGINT NOT NULL
);
