import type { JwtData } from "./types";

/** The tokens of one login, as the client keeps them. */
export interface TokenSet {
  tokenType: "Bearer";
  accessToken: string;
  accessTokenExpiresAt: Date;
  refreshToken: string;
  refreshTokenExpiresAt: Date;
}

/**
 * Where a client keeps its tokens between calls (and, for a file, between
 * runs). A refresh token works once, so a store shared by several processes
 * should implement `exclusive`: the client refreshes inside it, after
 * loading again, so that only one of them spends the token.
 */
export interface TokenStore {
  /** The stored tokens, or null when there are none. */
  load(): Promise<TokenSet | null>;
  save(tokens: TokenSet): Promise<void>;
  clear(): Promise<void>;
  /** Runs `work` while no other user of the same store runs its own (a lock across processes). */
  exclusive?<T>(work: () => Promise<T>): Promise<T>;
}

/** Keeps tokens in memory: for browsers, Workers and tests. */
export class MemoryTokenStore implements TokenStore {
  constructor(private tokens: TokenSet | null = null) {}

  async load(): Promise<TokenSet | null> {
    return this.tokens;
  }

  async save(tokens: TokenSet): Promise<void> {
    this.tokens = tokens;
  }

  async clear(): Promise<void> {
    this.tokens = null;
  }
}

/** A JwtResponse's Data (interface §2.3) as a TokenSet. */
export function tokenSetFromWire(data: JwtData): TokenSet {
  return {
    tokenType: "Bearer",
    accessToken: data.AccessToken,
    accessTokenExpiresAt: parseTime(data.AccessTokenExpiresOn, "AccessTokenExpiresOn"),
    refreshToken: data.RefreshToken,
    refreshTokenExpiresAt: parseTime(data.RefreshTokenExpiresOn, "RefreshTokenExpiresOn"),
  };
}

function parseTime(value: string, field: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new Error(`${field} is not a date-time: ${value}`);
  return date;
}
