import { Command, CommanderError } from "commander";
import { DqsApiError, DqsNetworkError, DqsQueryError, NotLoggedInError } from "../sdk";
import { version } from "../../package.json";
import { authCommands } from "./commands/auth";
import { dataCommands } from "./commands/data";
import { datasetCommands } from "./commands/datasets";
import { queryCommands, QueryStillRunningError } from "./commands/query";
import { webhookCommands } from "./commands/webhooks";
import { InvalidQueryError, UsageError, type GlobalOptions } from "./context";
import { LoginFailedError } from "./loopback";
import { json } from "./output";
import { DEFAULT_PROFILE, TokenFileError } from "./token-file";

/** Exit codes: documented in docs/cli.md. */
export const EXIT = { ok: 0, error: 1, usage: 2, unauthorized: 3, query: 4, stillRunning: 5 } as const;

/** The `dqs` program: every command, with the options all of them take. */
export function buildProgram(): Command {
  const program = new Command("dqs")
    .description("The dqs command line: datasets, uploads and SQL queries on a dqs service.")
    .version(version)
    .option("--url <url>", "the service (default: $DQS_URL, else the one the profile logged in to)")
    .option("-p, --profile <name>", "the token profile (default: $DQS_PROFILE, else Default)")
    .option("--json", "print JSON for scripts instead of text for people")
    .showHelpAfterError("(run dqs --help for usage)")
    .exitOverride();
  authCommands(program);
  datasetCommands(program);
  dataCommands(program);
  queryCommands(program);
  webhookCommands(program);
  return program;
}

/** Runs the command line and returns the exit code; errors print Status.Message on stderr. */
export async function run(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const profile = program.opts<GlobalOptions>().profile || process.env.DQS_PROFILE || DEFAULT_PROFILE;
    const { code, message, status } =
      error instanceof NotLoggedInError && !error.message.startsWith("Not logged in (")
        ? { code: EXIT.unauthorized, message: `Not logged in (profile ${profile}): run dqs login.`, status: null }
        : describe(error);
    process.stderr.write(`dqs: ${message}\n`);
    if ((program.opts<GlobalOptions>().json ?? false) && status !== null)
      process.stdout.write(json({ Status: { Code: status, Message: message } }));
    return code;
  }
}

function describe(error: unknown): { code: number; message: string; status: number | null } {
  if (error instanceof NotLoggedInError) return { code: EXIT.unauthorized, message: error.message, status: null };
  if (error instanceof DqsApiError) {
    if (error.code === 401)
      return { code: EXIT.unauthorized, message: `${error.message} (run dqs login to log in again)`, status: 401 };
    const id = error.code >= 500 && error.requestId ? ` [request ${error.requestId}]` : "";
    return { code: EXIT.error, message: `${error.message}${id}`, status: error.code };
  }
  if (error instanceof QueryStillRunningError) return { code: EXIT.stillRunning, message: error.message, status: null };
  if (error instanceof DqsQueryError || error instanceof InvalidQueryError)
    return { code: EXIT.query, message: error.message, status: null };
  if (error instanceof UsageError) return { code: EXIT.usage, message: error.message, status: null };
  if (error instanceof LoginFailedError || error instanceof TokenFileError)
    return { code: EXIT.error, message: error.message, status: null };
  if (error instanceof DqsNetworkError) return { code: EXIT.error, message: error.message, status: null };
  if (error instanceof TypeError && error.message === "fetch failed") {
    const cause = (error as TypeError & { cause?: { code?: string; message?: string } }).cause;
    return {
      code: EXIT.error,
      message: `Cannot reach the service: ${cause?.code ?? cause?.message ?? "network error"}`,
      status: null,
    };
  }
  return { code: EXIT.error, message: error instanceof Error ? error.message : String(error), status: null };
}

process.exitCode = await run(process.argv);
