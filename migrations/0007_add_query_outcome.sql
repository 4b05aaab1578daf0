-- A query's row becomes its history: how it ended is written here once, by
-- its Durable Object when it ends, and from then on the row alone answers
-- for it (status, listing). While it runs, the object holds its state and
-- these columns are NULL. Timings and result columns are JSON.
ALTER TABLE queries ADD COLUMN status TEXT CHECK (status IN ('succeeded', 'failed', 'cancelled'));
ALTER TABLE queries ADD COLUMN message TEXT;
ALTER TABLE queries ADD COLUMN updated_at TEXT;
ALTER TABLE queries ADD COLUMN size INTEGER;
ALTER TABLE queries ADD COLUMN row_count INTEGER;
ALTER TABLE queries ADD COLUMN bytes_loaded INTEGER;
ALTER TABLE queries ADD COLUMN peak_memory_bytes INTEGER;
ALTER TABLE queries ADD COLUMN timings TEXT;
ALTER TABLE queries ADD COLUMN engine TEXT;
ALTER TABLE queries ADD COLUMN result_key TEXT;
ALTER TABLE queries ADD COLUMN result_columns TEXT;
ALTER TABLE queries ADD COLUMN expires_at TEXT;
-- The cron deletes results by their expiry; rows without an end are those it asks the object about.
DROP INDEX queries_unpurged;
CREATE INDEX queries_results_due ON queries (expires_at) WHERE result_key IS NOT NULL;
CREATE INDEX queries_without_end ON queries (created_at) WHERE status IS NULL;
