-- The table store of a data item's current version (issue 12): a SQLite
-- Durable Object named from the version's object key, holding its typed
-- rows, for items with at least TABLE_STORE_MIN_ROWS rows. JSON
-- {state: "building" | "ready" | "failed", rows?, bytes?, message?}; NULL
-- when the version has none (yet). Set back to NULL with a new version.
ALTER TABLE data_items ADD COLUMN table_store TEXT;
