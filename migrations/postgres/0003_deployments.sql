-- PostgreSQL dialect of ../0003_deployments.sql: BYTEA for BLOB, BIGINT for
-- INTEGER (millisecond times overflow PostgreSQL's 32-bit INTEGER), an
-- identity column for AUTOINCREMENT.
-- Text columns are COLLATE "C": byte order, as SQLite compares, which
-- ReplicaKey's "NAME#K" ordering relies on (deployment_store.h), whatever
-- the database's default collation.
-- Deployments as documents: spec + status (plans, placement, attempts) in one
-- serialized dcufleet.v1.Deployment. Written before every action the
-- controller takes for the deployment (intent first), so a crash at any instant
-- can be reconciled against what the agents report.
CREATE TABLE deployments (
  name          TEXT COLLATE "C" PRIMARY KEY,
  model         TEXT COLLATE "C" NOT NULL,
  phase         TEXT COLLATE "C" NOT NULL,
  revision      BIGINT NOT NULL,
  doc           BYTEA NOT NULL,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL
);

-- The per-node assignment generation, monotonic across controller restarts.
CREATE TABLE node_generations (
  node        TEXT COLLATE "C" PRIMARY KEY,
  generation  BIGINT NOT NULL
);
