-- Leadership among controllers sharing one PostgreSQL database (issue 21):
-- one row, the lease. An SQLite store has one controller by construction
-- (controller/store/store_lock.h), so on SQLite the table stays as created;
-- it exists so that both dialects have the same schema versions.
CREATE TABLE controller_lease (
  id            INTEGER PRIMARY KEY CHECK (id = 1),
  holder        TEXT NOT NULL,
  address       TEXT NOT NULL,
  token         INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
INSERT INTO controller_lease(id, holder, address, token, expires_at_ms) VALUES (1, '', '', 0, 0);
