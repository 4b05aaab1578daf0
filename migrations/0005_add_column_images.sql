-- The query-ready form of a data item's current version (issue 6): one
-- SQLite image per column in R2, built by the queue consumer after the
-- upload. JSON {format, valuesPerRecord, rows, columns: [{key, bytes}]};
-- NULL until built, and set back to NULL when a new version is committed.
-- Queries read the CSV while it is NULL.
ALTER TABLE data_items ADD COLUMN column_images TEXT;
