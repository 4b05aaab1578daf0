import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { TokenSet, TokenStore } from "../sdk";

/** The default profile's key (interface §5 item 8). */
export const DEFAULT_PROFILE = "Default";

/** How long another process may hold the lock before it is taken as abandoned. */
const STALE_LOCK_MS = 30_000;
const LOCK_WAIT_MS = 15_000;

/**
 * One profile of the token file: the fields interface §5 item 8 names, plus
 * the service it belongs to and the account it acts for, so that later
 * commands need no flags.
 */
export interface ProfileEntry {
  TokenType: "Bearer";
  AccessToken: string;
  /** `YYYY-MM-DD HH:MM:SS`, UTC. */
  AccessTokenExpiresOn: string;
  RefreshToken: string;
  RefreshTokenExpiresOn: string;
  BaseUrl?: string;
  AccountName?: string;
}

type TokenFile = Record<string, Partial<ProfileEntry>>;

/** Something wrong with the token file itself: unreadable JSON, or a profile missing fields. */
export class TokenFileError extends Error {
  override name = "TokenFileError";
}

/**
 * Where the tokens live (interface §5 item 8): `%APPDATA%\dqs\token.json` on
 * Windows, `$HOME/.dqs/token.json` elsewhere.
 */
export function tokenFilePath(env: NodeJS.ProcessEnv = process.env, platform: string = process.platform): string {
  if (platform === "win32") {
    const appData = env.APPDATA ?? join(homedir(), "AppData", "Roaming");
    return join(appData, "dqs", "token.json");
  }
  return join(env.HOME || homedir(), ".dqs", "token.json");
}

/** A time as the token file writes it: `YYYY-MM-DD HH:MM:SS`, UTC. */
export function fileTime(date: Date): string {
  return date.toISOString().slice(0, 19).replace("T", " ");
}

/** Reads a `YYYY-MM-DD HH:MM:SS` (UTC) time of the token file. */
export function parseFileTime(value: unknown, field: string): Date {
  const match = typeof value === "string" && /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})$/.exec(value);
  const date = match ? new Date(`${match[1]}T${match[2]}Z`) : null;
  if (!date || Number.isNaN(date.getTime()))
    throw new TokenFileError(
      `${field} must be a UTC time written as YYYY-MM-DD HH:MM:SS, not ${JSON.stringify(value)}`,
    );
  return date;
}

/**
 * A profile of the token file as the SDK's TokenStore. Every write replaces
 * the whole file atomically (a temporary file with mode 0600, then a rename),
 * under a lock file that other `dqs` processes respect, so two commands that
 * refresh at once never both spend the same refresh token.
 */
export class FileTokenStore implements TokenStore {
  private locked = false;

  constructor(
    readonly path: string,
    readonly profile: string,
  ) {}

  /** The profile's entry as written, or null when there is none. */
  async entry(): Promise<Partial<ProfileEntry> | null> {
    return (await this.readFile())[this.profile] ?? null;
  }

  async load(): Promise<TokenSet | null> {
    const entry = await this.entry();
    if (!entry || !entry.AccessToken || !entry.RefreshToken) return null;
    const where = `profile ${this.profile} of ${this.path}`;
    try {
      return {
        tokenType: "Bearer",
        accessToken: entry.AccessToken,
        accessTokenExpiresAt: parseFileTime(entry.AccessTokenExpiresOn, "AccessTokenExpiresOn"),
        refreshToken: entry.RefreshToken,
        refreshTokenExpiresAt: parseFileTime(entry.RefreshTokenExpiresOn, "RefreshTokenExpiresOn"),
      };
    } catch (error) {
      throw new TokenFileError(`${where}: ${(error as Error).message}`);
    }
  }

  async save(tokens: TokenSet): Promise<void> {
    await this.update((entry) => ({
      ...entry,
      TokenType: "Bearer",
      AccessToken: tokens.accessToken,
      AccessTokenExpiresOn: fileTime(tokens.accessTokenExpiresAt),
      RefreshToken: tokens.refreshToken,
      RefreshTokenExpiresOn: fileTime(tokens.refreshTokenExpiresAt),
    }));
  }

  /** Records the service and account of the profile next to its tokens. */
  async describe(details: { baseUrl: string; accountName: string | null }): Promise<void> {
    await this.update((entry) => {
      const next: Partial<ProfileEntry> = { ...entry, BaseUrl: details.baseUrl };
      if (details.accountName) next.AccountName = details.accountName;
      else delete next.AccountName;
      return next;
    });
  }

  /** Removes the profile from the file. */
  async clear(): Promise<void> {
    await this.update(() => null);
  }

  async exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (this.locked) return work();
    const lock = `${this.path}.lock`;
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        const handle = await open(lock, "wx", 0o600);
        await handle.writeFile(String(process.pid));
        await handle.close();
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        const held = await stat(lock).catch(() => null);
        if (held && Date.now() - held.mtimeMs > STALE_LOCK_MS) {
          await rm(lock, { force: true });
          continue;
        }
        if (Date.now() > deadline)
          throw new TokenFileError(`${lock} is held by another dqs; delete it if no dqs is running.`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    this.locked = true;
    try {
      return await work();
    } finally {
      this.locked = false;
      await rm(lock, { force: true });
    }
  }

  private async update(change: (entry: Partial<ProfileEntry>) => Partial<ProfileEntry> | null): Promise<void> {
    await this.exclusive(async () => {
      const file = await this.readFile();
      const next = change(file[this.profile] ?? {});
      if (next === null) delete file[this.profile];
      else file[this.profile] = next;
      await this.writeFile(file);
    });
  }

  private async readFile(): Promise<TokenFile> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw error;
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as TokenFile;
    } catch {
      // reported below
    }
    throw new TokenFileError(`${this.path} is not a JSON object of profiles; fix it or delete it and log in again.`);
  }

  /** Writes the whole file through a temporary file and a rename, so a reader never sees half of it. */
  private async writeFile(file: TokenFile): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temporary, this.path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    // A file that existed with looser permissions gets 0600 too (the rename kept the temporary file's mode).
    await chmod(this.path, 0o600).catch(() => undefined);
  }
}
