-- Command-line logins (RFC 8252 loopback redirect). GET /v1/auth may name a
-- loopback redirect_uri and a PKCE code_challenge; the login flow carries
-- them through the provider and the terms page.
ALTER TABLE login_flows ADD COLUMN client_redirect_uri TEXT;
ALTER TABLE login_flows ADD COLUMN client_code_challenge TEXT;
ALTER TABLE login_flows ADD COLUMN client_state TEXT;

-- A finished command-line login waiting to be exchanged: the one-time code
-- (hashed) sent to the loopback address, good once within two minutes, and
-- only with the PKCE verifier behind code_challenge and the same redirect_uri.
CREATE TABLE login_codes (
  code_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX login_codes_expiry ON login_codes (expires_at);
