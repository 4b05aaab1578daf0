import type { Command } from "commander";
import { DqsClient, NotLoggedInError } from "../sdk";
import { json, write } from "./output";
import { DEFAULT_PROFILE, FileTokenStore, tokenFilePath } from "./token-file";

/** A mistake in how the command was called: exit code 2, like the argument parser's own. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** `dqs validate` found the query not valid: exit code 4, as for a query that failed. */
export class InvalidQueryError extends Error {
  override name = "InvalidQueryError";
}

/** Options every command takes (`dqs --url … --profile … --json <command>`, or after the command). */
export interface GlobalOptions {
  url?: string;
  profile?: string;
  json?: boolean;
}

/**
 * What a command runs with: the profile and service it talks to (flags, then
 * DQS_PROFILE / DQS_URL, then the profile's entry), the token file, and
 * whether to print JSON.
 */
export class Context {
  readonly profile: string;
  readonly store: FileTokenStore;
  readonly json: boolean;

  constructor(
    private readonly options: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.profile = options.profile || env.DQS_PROFILE || DEFAULT_PROFILE;
    this.store = new FileTokenStore(tokenFilePath(env), this.profile);
    this.json = options.json === true;
  }

  /** The context of a command's action, from its options and its parents'. */
  static of(command: Command): Context {
    return new Context(command.optsWithGlobals<GlobalOptions>());
  }

  /** The service's URL: --url, DQS_URL, or the one the profile logged in to. */
  async baseUrl(): Promise<string> {
    const url = this.options.url || this.env.DQS_URL || (await this.store.entry())?.BaseUrl;
    if (!url)
      throw new UsageError(
        `No service URL for profile ${this.profile}: pass --url URL or set DQS_URL (dqs login --url URL remembers it).`,
      );
    try {
      return new URL(url).toString().replace(/\/+$/, "");
    } catch {
      throw new UsageError(`Not a URL: ${url}`);
    }
  }

  /**
   * An SDK client for the profile, its tokens kept in the token file. A
   * profile with neither a URL nor tokens (never logged in, or logged out)
   * is not logged in, which is what its user needs to hear.
   */
  async client(): Promise<DqsClient> {
    const known = this.options.url || this.env.DQS_URL || (await this.store.entry())?.BaseUrl;
    if (!known && !(await this.store.load()))
      throw new NotLoggedInError(
        `Not logged in (profile ${this.profile}): run dqs login --url URL (or set DQS_URL to the service).`,
      );
    return new DqsClient({ baseUrl: await this.baseUrl(), tokens: this.store });
  }

  /** Prints a result: JSON for --json, else the human text. */
  async print(value: unknown, human: () => string): Promise<void> {
    await write(process.stdout, this.json ? json(value) : human());
  }

  /** A line for the person at the terminal (stderr, so stdout stays the result). */
  async note(text: string): Promise<void> {
    await write(process.stderr, `${text}\n`);
  }
}

/** ACCOUNT/DATASET or ACCOUNT/DATASET/NAME, split. */
export function parseRef(text: string, parts: 2): [string, string];
export function parseRef(text: string, parts: 3): [string, string, string];
export function parseRef(text: string, parts: 2 | 3): string[] {
  const pieces = text.split("/");
  if (pieces.length !== parts || pieces.some((piece) => piece === ""))
    throw new UsageError(
      `Expected ${parts === 2 ? "ACCOUNT/DATASET" : "ACCOUNT/DATASET/NAME"}, got ${JSON.stringify(text)}.`,
    );
  return pieces;
}
