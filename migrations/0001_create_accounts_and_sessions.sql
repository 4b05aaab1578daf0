-- Accounts own datasets. Today every account is a user's personal account;
-- `kind` leaves room for organisations.
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL DEFAULT 'user' CHECK (kind IN ('user', 'organization')),
  created_at TEXT NOT NULL
);

-- A person, identified by their identity provider's (issuer, subject).
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL UNIQUE REFERENCES accounts (id),
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  email TEXT,
  terms_version TEXT,
  terms_accepted_at TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (issuer, subject)
);

-- One login. Every refresh token descends from one session; revoking the
-- session ends all of them and every access token that names it.
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  created_at TEXT NOT NULL,
  revoked_at TEXT,
  revoked_reason TEXT
);
CREATE INDEX sessions_by_user ON sessions (user_id);

-- Refresh tokens, stored only as SHA-256 hashes. A rotated token keeps its
-- row (rotated_at set) so that its reuse can be recognised.
CREATE TABLE refresh_tokens (
  token_hash TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  issued_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  rotated_at TEXT
);
CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);

-- A login in progress: the state (hashed), nonce and PKCE verifier between
-- GET /v1/auth and the callback, then the user while they read the terms.
CREATE TABLE login_flows (
  state_hash TEXT PRIMARY KEY,
  nonce TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  user_id TEXT REFERENCES users (id),
  expires_at TEXT NOT NULL
);

-- Development mode only: the signing key generated on first use, and the
-- built-in identity provider's authorization codes.
CREATE TABLE dev_signing_keys (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  jwks TEXT NOT NULL
);
CREATE TABLE dev_idp_codes (
  code_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  nonce TEXT,
  username TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
