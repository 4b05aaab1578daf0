-- Completion webhooks (issue 13): the URL a query's end is POSTed to, each
-- user's signing secret, and every attempt to deliver a query's webhook.
--
-- callback_url is part of what was submitted (NULL: no webhook); the query's
-- Durable Object hands the end to the webhook queue once the row has it.
ALTER TABLE queries ADD COLUMN callback_url TEXT;

-- The secret signs the webhooks of all the user's queries (Standard
-- Webhooks: "whsec_" + base64 of 32 random bytes). It is kept as it is, since
-- signing needs it and GET /v1/me/webhook-secret shows it again. A rotation
-- keeps the one before in previous_secret; webhooks are signed with both
-- until a day after rotated_at, so a receiver can switch without losing one.
CREATE TABLE webhook_secrets (
  user_id TEXT PRIMARY KEY REFERENCES users (id),
  secret TEXT NOT NULL,
  previous_secret TEXT,
  rotated_at TEXT,
  created_at TEXT NOT NULL
);

-- One row per attempt (attempt = the queue message's attempt, from 1); the
-- query's status shows the latest. delivered is 1 for a 2xx answer;
-- next_attempt_at is when the queue tries again (NULL: delivered or given
-- up). The cron deletes rows older than the query result retention.
CREATE TABLE webhook_deliveries (
  query_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  url TEXT NOT NULL,
  status_code INTEGER,
  error TEXT,
  delivered INTEGER NOT NULL,
  next_attempt_at TEXT,
  at TEXT NOT NULL,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (query_id, attempt)
);
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (at);
