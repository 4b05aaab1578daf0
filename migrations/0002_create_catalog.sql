-- A dataset belongs to one account; private unless made public.
CREATE TABLE datasets (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  name TEXT NOT NULL,
  visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'public')),
  description TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (account_id, name)
);
CREATE INDEX datasets_public ON datasets (visibility) WHERE visibility = 'public';

-- What the owner lets another account do with a dataset.
CREATE TABLE grants (
  dataset_id TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  permission TEXT NOT NULL CHECK (permission IN ('read', 'write')),
  granted_at TEXT NOT NULL,
  PRIMARY KEY (dataset_id, account_id)
);
CREATE INDEX grants_by_account ON grants (account_id);

-- A data item: the current version of one uploaded CSV file. The raw bytes
-- live in R2 under object_key; a new upload writes a new key and switches
-- this row to it in one statement.
CREATE TABLE data_items (
  id TEXT PRIMARY KEY,
  dataset_id TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  object_key TEXT NOT NULL,
  size INTEGER NOT NULL,
  row_count INTEGER NOT NULL,
  schema TEXT NOT NULL,
  delivery_type TEXT NOT NULL CHECK (delivery_type IN ('RAW', 'GZIP')),
  content_hash TEXT NOT NULL,
  uploaded_by TEXT NOT NULL REFERENCES users (id),
  uploaded_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (dataset_id, name)
);

-- R2 objects no data item points to (a replaced version, a deleted item, an
-- upload in progress or one that failed). Each is deleted once delete_after
-- has passed: replaced versions wait so that queries already reading them
-- can finish; uploads in progress are listed first so that a Worker that
-- dies mid-upload leaves nothing behind for good.
CREATE TABLE orphan_objects (
  object_key TEXT PRIMARY KEY,
  reason TEXT NOT NULL,
  delete_after TEXT NOT NULL
);
CREATE INDEX orphan_objects_due ON orphan_objects (delete_after);
