-- Web console sign-ins (backend-for-frontend): the browser holds an opaque
-- HttpOnly cookie, stored here only as its SHA-256 hash, that stands for a
-- session of `sessions`; no access or refresh token is ever handed to the
-- browser. Signing out deletes the row and revokes the session.
CREATE TABLE console_sessions (
  token_hash TEXT PRIMARY KEY,
  session_id TEXT NOT NULL UNIQUE REFERENCES sessions (id),
  expires_at TEXT NOT NULL
);
CREATE INDEX console_sessions_due ON console_sessions (expires_at);

-- A login started by the console (GET /console/sign-in) ends in a console
-- session instead of the tokens page.
ALTER TABLE login_flows ADD COLUMN console INTEGER NOT NULL DEFAULT 0;
