import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { stripVTControlCharacters } from "node:util";

const ROOT = resolve(import.meta.dirname, "../../..");

const scratch: string[] = [];
// Outside a test run (the bench), removed when the process ends.
process.on("exit", () => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A new temporary directory: inside the e2e run's (test/e2e/support/global-scratch.ts), else the system's. */
export function scratchDir(prefix: string): string {
  const inRun = process.env.DQS_TEST_SCRATCH;
  const dir = mkdtempSync(join(inRun ?? tmpdir(), prefix));
  if (!inRun) scratch.push(dir);
  return dir;
}

/** What one run of `dqs` printed, and how it exited. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Builds the command line from the current sources, exactly as `npm run
 * build:cli` (and so `prepare`) does, into a temporary file; returns its path.
 */
export function buildCli(): string {
  const outfile = join(scratchDir("dqs-cli-"), "dqs.mjs");
  const build = spawnSync(process.execPath, [join(ROOT, "src/cli/build.mjs"), outfile], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (build.status !== 0) throw new Error(`building the CLI failed:\n${build.stdout}\n${build.stderr}`);
  return outfile;
}

/** A temporary HOME for one test's token file. */
export function temporaryHome(): string {
  return scratchDir("dqs-home-");
}

/** The token file the CLI keeps under a HOME (interface §5 item 8). */
export function tokenFile(home: string): string {
  return join(home, ".dqs", "token.json");
}

/** The token file, parsed. */
export function readTokenFile(home: string): Record<string, Record<string, string>> {
  return JSON.parse(readFileSync(tokenFile(home), "utf8")) as Record<string, Record<string, string>>;
}

/** The permission bits of the token file. */
export function tokenFileMode(home: string): number {
  return statSync(tokenFile(home)).mode & 0o777;
}

export interface CliOptions {
  home: string;
  /** Extra environment (DQS_URL, DQS_PROFILE, …); the caller's own DQS_* variables are never passed on. */
  env?: Record<string, string>;
  /** Written to standard input, which then stays open unless `closeStdin`. */
  stdin?: string;
  closeStdin?: boolean;
  cwd?: string;
}

/** A running `dqs`: its output so far, a way to wait for a line, and how it ended. */
export interface RunningCli {
  process: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stderr, waiting up to `timeoutMs`. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  result: Promise<CliResult>;
}

function cliEnv(options: CliOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: options.home, NO_COLOR: "1", ...options.env };
  for (const name of ["DQS_URL", "DQS_PROFILE"]) if (!options.env?.[name]) delete env[name];
  return env;
}

/** Starts `dqs` with the given arguments as a separate Node process, as a user's shell would. */
export function startCli(cli: string, args: string[], options: CliOptions): RunningCli {
  const env = cliEnv(options);
  const child = spawn(process.execPath, [cli, ...args], { cwd: options.cwd ?? options.home, env });
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const wake of waiters) wake();
  });
  if (options.stdin !== undefined) child.stdin.write(options.stdin);
  if (options.closeStdin ?? options.stdin === undefined) child.stdin.end();
  const result = new Promise<CliResult>((done) => child.on("close", (code) => done({ code, stdout, stderr })));
  return {
    process: child,
    stdout: () => stdout,
    stderr: () => stderr,
    result,
    waitForStderr(pattern, timeoutMs = 30_000) {
      return new Promise((done, fail) => {
        const check = () => {
          const match = stderr.match(pattern);
          if (!match) return;
          cleanup();
          done(match);
        };
        const timer = setTimeout(() => {
          cleanup();
          fail(new Error(`dqs printed no ${pattern} within ${timeoutMs} ms; stderr:\n${stderr}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        void result.then(() => {
          if (waiters.has(check)) {
            cleanup();
            fail(new Error(`dqs exited without printing ${pattern}; stderr:\n${stderr}`));
          }
        });
        check();
      });
    },
  };
}

/** Runs `dqs` to the end. */
export function runCli(cli: string, args: string[], options: CliOptions): Promise<CliResult> {
  return startCli(cli, args, options).result;
}

/** Whether util-linux `script`, which gives a command a pseudo-terminal, is installed. */
export const hasScript = spawnSync("script", ["--version"]).status === 0;

/**
 * Runs `dqs` at a terminal of `rows` × `columns` (a pseudo-terminal made by
 * util-linux `script`), as a person would. Returns the exit code and the lines
 * the terminal shows, stdout and stderr together, with the control sequences
 * (the spinner's redraws) taken out and each line as its last redraw left it.
 */
export function runCliAtTerminal(
  cli: string,
  args: string[],
  options: CliOptions & { rows: number; columns: number },
): Promise<{ code: number | null; lines: string[] }> {
  const quote = (word: string) => `'${word.replace(/'/g, "'\\''")}'`;
  const command = `stty rows ${options.rows} cols ${options.columns}; exec ${[process.execPath, cli, ...args].map(quote).join(" ")}`;
  const child = spawn("script", ["--quiet", "--return", "--command", command, "/dev/null"], {
    cwd: options.cwd ?? options.home,
    env: cliEnv(options),
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((done) =>
    child.on("close", (code) =>
      done({
        code,
        lines: stripVTControlCharacters(output)
          .split("\n")
          .map((line) => line.replace(/\r$/, "").split("\r").at(-1)!),
      }),
    ),
  );
}
