-- Result reuse (query/reuse.ts). `reuse_key` is written with a succeeded
-- query's end: a hash of its SQL text, its parameters and the versions of the
-- data items it read; a later query with the same key may answer from its
-- result. `reused_from` is set on a query that did: the query whose result it
-- shares (never shown to the caller). Its `result_key` is that query's, so
-- the sweep deletes an object only once no row still in its retention points
-- to it.
ALTER TABLE queries ADD COLUMN reuse_key TEXT;
ALTER TABLE queries ADD COLUMN reused_from TEXT;
CREATE INDEX queries_by_reuse_key ON queries (reuse_key, expires_at) WHERE reuse_key IS NOT NULL AND result_key IS NOT NULL;
CREATE INDEX queries_by_result_key ON queries (result_key, expires_at) WHERE result_key IS NOT NULL;
