-- Nodes known to the controller. A node is identified by its name; a
-- re-registration updates the row, never adds one.
CREATE TABLE nodes (
  node_id        TEXT PRIMARY KEY,
  name           TEXT NOT NULL UNIQUE,
  agent_version  TEXT NOT NULL DEFAULT '',
  capabilities   TEXT NOT NULL DEFAULT '',
  -- dcufleet.v1.NodeInventory, serialized protobuf.
  inventory      BLOB,
  state          TEXT NOT NULL DEFAULT 'NotReady',
  state_reason   TEXT NOT NULL DEFAULT '',
  registered_at_ms INTEGER NOT NULL,
  last_seen_ms   INTEGER NOT NULL,
  updated_at_ms  INTEGER NOT NULL
);

-- Everything that happened, in order; what `dcuctl describe` shows.
CREATE TABLE events (
  event_id     INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms        INTEGER NOT NULL,
  -- "node", "deployment", "instance", "stack".
  subject_kind TEXT NOT NULL,
  subject      TEXT NOT NULL,
  -- "Normal" or "Warning", as kubectl shows them.
  type         TEXT NOT NULL,
  reason       TEXT NOT NULL,
  message      TEXT NOT NULL
);
CREATE INDEX events_by_subject ON events(subject_kind, subject, event_id);
