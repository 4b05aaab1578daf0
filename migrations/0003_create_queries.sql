-- The history of a user's queries. A query's state lives in its Durable
-- Object (one per query id); this table knows who owns which query, finds
-- a retried submit by its Idempotency-Key, lists a user's queries, and lets
-- the cron find results that are due for deletion.
CREATE TABLE queries (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  sql TEXT NOT NULL,
  idempotency_key TEXT,
  created_at TEXT NOT NULL,
  result_purged_at TEXT
);
CREATE INDEX queries_by_user ON queries (user_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX queries_by_idempotency_key ON queries (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX queries_unpurged ON queries (created_at) WHERE result_purged_at IS NULL;
