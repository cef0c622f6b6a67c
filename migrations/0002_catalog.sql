-- The tested-stack matrix and the model catalog (issue 4). Rows map to
-- protobuf messages of dcufleet/v1/catalog.proto; the columns beside the
-- blob are what queries filter on.

-- Software stacks: from deploy/catalog files, `dcuctl stack import`, or
-- registered (untested) when an agent reports an unknown env or image.
CREATE TABLE stacks (
  stack_id         TEXT PRIMARY KEY,
  engine           TEXT NOT NULL,
  engine_version   TEXT NOT NULL,
  -- "bare" or "container".
  runtime_kind     TEXT NOT NULL,
  runtime_location TEXT NOT NULL,
  -- "catalog:<file>" or "discovered:<node>".
  origin           TEXT NOT NULL,
  -- dcufleet.v1.Stack.
  spec             BLOB NOT NULL,
  created_at_ms    INTEGER NOT NULL,
  updated_at_ms    INTEGER NOT NULL
);
CREATE INDEX stacks_by_location ON stacks(runtime_kind, runtime_location);

-- Every launch outcome, probe and seed report: what verdicts are computed from.
CREATE TABLE evidence (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  evidence_id   TEXT NOT NULL UNIQUE,
  stack_id      TEXT NOT NULL REFERENCES stacks(stack_id),
  arch          TEXT NOT NULL,
  model         TEXT NOT NULL,
  node          TEXT NOT NULL,
  -- "ready" or "failed".
  outcome       TEXT NOT NULL,
  failure_class TEXT NOT NULL,
  at_ms         INTEGER NOT NULL,
  -- dcufleet.v1.Evidence.
  row           BLOB NOT NULL
);
CREATE INDEX evidence_by_stack_arch ON evidence(stack_id, arch, at_ms);
CREATE INDEX evidence_by_model ON evidence(model, arch);

-- The model catalog.
CREATE TABLE models (
  name          TEXT PRIMARY KEY,
  hf_repo       TEXT NOT NULL,
  -- dcufleet.v1.ModelEntry.
  entry         BLOB NOT NULL,
  updated_at_ms INTEGER NOT NULL
);

-- Model directories agents found, with the controller's audit.
CREATE TABLE node_model_dirs (
  node          TEXT NOT NULL,
  path          TEXT NOT NULL,
  model         TEXT NOT NULL,
  config_sha256 TEXT NOT NULL,
  -- dcufleet.v1.NodeModelDirectory.
  row           BLOB NOT NULL,
  seen_at_ms    INTEGER NOT NULL,
  PRIMARY KEY (node, path)
);
CREATE INDEX node_model_dirs_by_model ON node_model_dirs(model);

-- Conda envs and images agents found, and the stack each is.
CREATE TABLE node_environments (
  node       TEXT NOT NULL,
  kind       TEXT NOT NULL,
  location   TEXT NOT NULL,
  stack_id   TEXT NOT NULL REFERENCES stacks(stack_id),
  -- dcufleet.v1.NodeEnvironment.
  row        BLOB NOT NULL,
  seen_at_ms INTEGER NOT NULL,
  PRIMARY KEY (node, kind, location)
);
CREATE INDEX node_environments_by_stack ON node_environments(stack_id);
