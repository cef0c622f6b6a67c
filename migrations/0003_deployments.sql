-- Deployments as documents: spec + status (plans, placement, attempts) in one
-- serialized dcufleet.v1.Deployment. Written before every action the
-- controller takes for the deployment (intent first), so a crash at any instant
-- can be reconciled against what the agents report.
CREATE TABLE deployments (
  name          TEXT PRIMARY KEY,
  model         TEXT NOT NULL,
  phase         TEXT NOT NULL,
  revision      INTEGER NOT NULL,
  doc           BLOB NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);

-- The per-node assignment generation, monotonic across controller restarts.
CREATE TABLE node_generations (
  node        TEXT PRIMARY KEY,
  generation  INTEGER NOT NULL
);
