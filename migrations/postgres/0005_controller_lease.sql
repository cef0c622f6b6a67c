-- Leadership among controllers sharing this database (issue 21,
-- controller/store/pg_leader_lease.h): one row. `token` is the fencing
-- token, raised by every acquisition; `expires_at` is on the database's
-- clock, so the controllers' clocks never have to agree. Every store write
-- checks the row (FOR SHARE) in its own transaction.
CREATE TABLE controller_lease (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  -- Who holds it (a per-process id) and where its gRPC API listens, which
  -- followers give writers.
  holder      TEXT COLLATE "C" NOT NULL,
  address     TEXT COLLATE "C" NOT NULL,
  token       BIGINT NOT NULL,
  expires_at  TIMESTAMPTZ NOT NULL
);
INSERT INTO controller_lease(id, holder, address, token, expires_at)
  VALUES (1, '', '', 0, 'epoch');
