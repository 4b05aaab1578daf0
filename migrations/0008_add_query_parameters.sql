-- The values of a query's placeholders (SqlRequest.Parameters), as JSON, NULL
-- without: written at submit with its SQL, and compared with a retried
-- submit's under the same Idempotency-Key.
ALTER TABLE queries ADD COLUMN parameters TEXT;
