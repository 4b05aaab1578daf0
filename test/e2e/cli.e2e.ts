import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchBrowser } from "./support/browser";
import { browserLoopbackLogin, httpRefreshToken } from "./support/cli-login";
import { COUNTING_SQL } from "./support/long-query";
import {
  buildCli,
  hasScript,
  readTokenFile,
  runCli,
  runCliAtTerminal,
  startCli,
  temporaryHome,
  tokenFile,
  tokenFileMode,
  type CliResult,
} from "./support/cli-run";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// CI installs Chromium; anywhere else without it the browser login is skipped (never silently in CI).
const browserTest = hasChromium || process.env.CI ? describe : describe.skip;
// The same for util-linux `script`, which gives the CLI a terminal.
const terminalTest = hasScript || process.env.CI ? it : it.skip;

const ACCOUNT = "e2e-cli-erin";
const FILE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

let server: DevServer;
let cli: string;
let home: string;

/** `dqs` against the wrangler dev server, with the test's HOME (so its token file). */
function dqs(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<CliResult> {
  return runCli(cli, args, { home, env: { DQS_URL: server.url, ...options.env }, stdin: options.stdin });
}

/** The subject (`sub`) of an access token: the user it acts for. */
function subjectOf(accessToken: string): string {
  return (JSON.parse(Buffer.from(accessToken.split(".")[1]!, "base64url").toString()) as { sub: string }).sub;
}

/** The terms version the development server runs with (wrangler.toml). */
const TERMS_VERSION = /^TERMS_VERSION = "(.*)"$/m.exec(
  readFileSync(join(import.meta.dirname, "../../wrangler.toml"), "utf8"),
)![1]!;

/**
 * The suites below use the Default profile. The browser login has logged it
 * in, unless Chromium is missing (outside CI); then a pasted refresh token does.
 */
async function defaultProfileLoggedIn(): Promise<void> {
  if (existingProfiles().includes("Default")) return;
  const refreshToken = await httpRefreshToken(server.url, ACCOUNT);
  const login = await dqs(["login", "--no-browser"], { stdin: `${refreshToken}\n` });
  if (login.code !== 0) throw new Error(`logging Default in failed: ${login.stderr}`);
}

/** Seconds from now until a token-file time. */
function secondsUntil(fileTime: string): number {
  return (Date.parse(`${fileTime.replace(" ", "T")}Z`) - Date.now()) / 1000;
}

beforeAll(async () => {
  cli = buildCli();
  home = temporaryHome();
  server = await startWranglerDev();
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe("dqs without a login", () => {
  it("should print help and exit 0, and exit 2 for an unknown command", async () => {
    const help = await dqs(["--help"]);
    expect(help.code).toBe(0);
    for (const command of ["login", "logout", "whoami", "datasets", "dataset", "data", "upload", "download", "schema"])
      expect(help.stdout).toContain(`  ${command}`);
    for (const command of ["query", "status", "cancel", "queries"]) expect(help.stdout).toContain(`  ${command}`);

    const unknown = await dqs(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });

  it("should exit 3 and say how to log in when the profile has no tokens", async () => {
    const result = await dqs(["datasets"]);

    expect(result.code).toBe(3);
    expect(result.stderr).toBe("dqs: Not logged in (profile Default): run dqs login.\n");
  });

  it("should exit 3 saying how to log in when no service URL is known and there are no tokens", async () => {
    const result = await runCli(cli, ["datasets"], { home: temporaryHome() });

    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      "dqs: Not logged in (profile Default): run dqs login --url URL (or set DQS_URL to the service).\n",
    );
  });

  it("should exit 2 when dqs login has no service URL", async () => {
    const result = await runCli(cli, ["login", "--no-browser"], { home: temporaryHome() });

    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "dqs: No service URL for profile Default: pass --url URL or set DQS_URL (dqs login --url URL remembers it).\n",
    );
  });

  it("should exit 1 with the reason when the service cannot be reached", async () => {
    const elsewhere = temporaryHome();
    const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
    const port = await closedPort();
    mkdirSync(join(elsewhere, ".dqs"));
    writeFileSync(
      tokenFile(elsewhere),
      JSON.stringify({
        Default: {
          TokenType: "Bearer",
          AccessToken: "a.b.c",
          AccessTokenExpiresOn: later,
          RefreshToken: "r",
          RefreshTokenExpiresOn: later,
          BaseUrl: `http://127.0.0.1:${port}`,
        },
      }),
    );

    const result = await runCli(cli, ["datasets"], { home: elsewhere });

    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`dqs: Cannot reach the service at http://127.0.0.1:${port}: ECONNREFUSED\n`);
  });

  it("should give up a login that does not finish within --timeout", async () => {
    const result = await runCli(cli, ["login", "--no-browser", "--timeout", "1"], {
      home: temporaryHome(),
      env: { DQS_URL: server.url },
    });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("dqs: No login within 1 s; run dqs login again.");
    expect(result.stdout).toBe("");
  });
});

describe("dqs login's loopback listener", () => {
  it("should ignore a callback with another state, and fail the login when the provider refused", async () => {
    const running = startCli(cli, ["login", "--no-browser"], {
      home: temporaryHome(),
      env: { DQS_URL: server.url },
      stdin: "",
    });
    const [url] = await running.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/v1\/auth\?\S+/);
    const login = new URL(url);
    const callback = new URL(login.searchParams.get("redirect_uri")!);

    callback.search = new URLSearchParams({ code: "x", state: "forged" }).toString();
    const forged = await fetch(callback);
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain("not the login the dqs command line is waiting for");

    callback.search = new URLSearchParams({
      error: "access_denied",
      state: login.searchParams.get("state")!,
    }).toString();
    const denied = await fetch(callback);
    expect(denied.status).toBe(400);
    const result = await running.result;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("dqs: The login did not finish: the identity provider refused it.");
    expect(result.stdout).toBe("");
  });
});

browserTest("dqs login through the browser (loopback redirect)", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("should print a login URL, land the browser back on 127.0.0.1 and save the tokens", async () => {
    const running = startCli(cli, ["login", "--no-browser", "--url", server.url], { home, stdin: "" });
    const [url] = await running.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/v1\/auth\?\S+/);
    const login = new URL(url);
    expect(login.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(login.searchParams.get("code_challenge_method")).toBe("S256");

    const landed = await browserLoopbackLogin(browser, url, ACCOUNT);
    const result = await running.result;

    expect(landed.title).toBe("Logged in");
    expect(landed.message).toContain(`as ${ACCOUNT}`);
    expect(new URL(landed.url).searchParams.get("state")).toBe(login.searchParams.get("state"));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `Logged in to ${server.url}/v1 as ${ACCOUNT} (profile Default); tokens saved in ${tokenFile(home)}.\n`,
    );
  });

  it("should write the token file of interface §5 item 8, mode 0600, and nothing else beside it", () => {
    const file = readTokenFile(home);

    expect(Object.keys(file)).toEqual(["Default"]);
    const entry = file.Default!;
    expect(entry).toEqual({
      TokenType: "Bearer",
      AccessToken: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      AccessTokenExpiresOn: expect.stringMatching(FILE_TIME),
      RefreshToken: expect.stringMatching(/^[\w-]{43}$/),
      RefreshTokenExpiresOn: expect.stringMatching(FILE_TIME),
      BaseUrl: server.url,
      AccountName: ACCOUNT,
    });
    expect(secondsUntil(entry.AccessTokenExpiresOn!)).toBeGreaterThan(3500);
    expect(secondsUntil(entry.RefreshTokenExpiresOn!) / 86400).toBeCloseTo(45, 1);
    expect(tokenFileMode(home)).toBe(0o600);
    expect(readdirSync(join(home, ".dqs"))).toEqual(["token.json"]);
  });

  it("should say who is logged in, with the service and expiry from the profile alone", async () => {
    const result = await runCli(cli, ["whoami", "--json"], { home });

    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      AccountName: ACCOUNT,
      UserId: subjectOf(readTokenFile(home).Default!.AccessToken!),
      TermsVersion: TERMS_VERSION,
      Profile: "Default",
      BaseUrl: `${server.url}/v1`,
      TokenFile: tokenFile(home),
      AccessTokenExpiresOn: readTokenFile(home).Default!.AccessTokenExpiresOn,
      RefreshTokenExpiresOn: readTokenFile(home).Default!.RefreshTokenExpiresOn,
    });
  });
});

describe("dqs login with a pasted refresh token", () => {
  it("should log a second profile in from standard input, leaving the first one alone", async () => {
    const before = existingProfiles();
    const refreshToken = await httpRefreshToken(server.url, ACCOUNT);

    const result = await dqs(["login", "--no-browser", "--profile", "pasted"], { stdin: `${refreshToken}\n` });

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("paste the refresh token");
    // The token says nothing of its account; the service (GET /v1/me) does.
    expect(result.stdout).toBe(
      `Logged in to ${server.url}/v1 as ${ACCOUNT} (profile pasted); tokens saved in ${tokenFile(home)}.\n`,
    );
    const file = readTokenFile(home);
    expect(Object.keys(file).sort()).toEqual([...before, "pasted"].sort());
    expect(file.pasted?.RefreshToken).not.toBe(refreshToken);
    expect(file.pasted?.AccountName).toBe(ACCOUNT);
    const list = await dqs(["datasets"], { env: { DQS_PROFILE: "pasted" } });
    expect(list.code, list.stderr).toBe(0);
  });

  it("should say whom a pasted token acts for, as the service tells it", async () => {
    const result = await dqs(["whoami", "--profile", "pasted"]);

    expect(result.code, result.stderr).toBe(0);
    const user = subjectOf(readTokenFile(home).pasted!.AccessToken!);
    expect(result.stdout).toMatch(
      new RegExp(`^Account +${ACCOUNT}\nUser +${user}\nTerms accepted +version ${TERMS_VERSION}\nProfile +pasted\n`),
    );
  });
});

/** A local port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((done) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => done(port));
    });
  });
}

function existingProfiles(): string[] {
  try {
    return Object.keys(readTokenFile(home));
  } catch {
    return [];
  }
}

describe("token renewal from the token file", () => {
  beforeAll(defaultProfileLoggedIn);

  it("should renew an access token that has expired and write the new tokens back atomically", async () => {
    const file = readTokenFile(home);
    const old = { ...file.Default! };
    file.Default!.AccessTokenExpiresOn = "2000-01-01 00:00:00";
    writeFileSync(tokenFile(home), JSON.stringify(file));

    const result = await dqs(["datasets", "--json"]);

    expect(result.code, result.stderr).toBe(0);
    const renewed = readTokenFile(home).Default!;
    expect(renewed.AccessToken).not.toBe(old.AccessToken);
    expect(renewed.RefreshToken).not.toBe(old.RefreshToken);
    expect(secondsUntil(renewed.AccessTokenExpiresOn!)).toBeGreaterThan(3500);
    expect(renewed.AccountName).toBe(ACCOUNT);
    expect(tokenFileMode(home)).toBe(0o600);
    expect(readdirSync(join(home, ".dqs")).sort()).toEqual(["token.json"]);
  });

  it("should renew after a 401 when the access token is not valid", async () => {
    const file = readTokenFile(home);
    const old = file.Default!.RefreshToken;
    file.Default!.AccessToken = "corrupted";
    writeFileSync(tokenFile(home), JSON.stringify(file));

    const result = await dqs(["datasets"]);

    expect(result.code, result.stderr).toBe(0);
    expect(readTokenFile(home).Default!.RefreshToken).not.toBe(old);
  });

  it("should renew only once when several commands find the token expired at the same time", async () => {
    const file = readTokenFile(home);
    file.Default!.AccessTokenExpiresOn = "2000-01-01 00:00:00";
    writeFileSync(tokenFile(home), JSON.stringify(file));

    const results = await Promise.all([dqs(["datasets"]), dqs(["datasets"]), dqs(["datasets"])]);

    // A refresh token spent twice would have revoked the session and failed the others.
    expect(results.map((r) => r.code)).toEqual([0, 0, 0]);
    expect((await dqs(["whoami"])).code).toBe(0);
  });
});

describe("datasets, uploads and downloads", () => {
  beforeAll(defaultProfileLoggedIn);

  const rows = Array.from(
    { length: 60_000 },
    (_, i) => `${i + 1},item ${i + 1},${(i % 100) * 1.5},2024-01-${String((i % 28) + 1).padStart(2, "0")}`,
  );
  const csv = `id,name,amount,day\n${rows.join("\n")}\n`;

  it("should create a dataset and list it as an aligned table, or as JSON", async () => {
    const created = await dqs(["dataset", "create", `${ACCOUNT}/sales`]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toBe(`Dataset ${ACCOUNT}/sales created.\n`);
    await dqs(["dataset", "create", `${ACCOUNT}/archive`, "--visibility", "public"]);

    const table = await dqs(["datasets"]);
    expect(table.stdout).toBe(["ACCOUNT       DATASET", `${ACCOUNT}  archive`, `${ACCOUNT}  sales`, ""].join("\n"));
    const json = await dqs(["datasets", ACCOUNT, "--json"]);
    expect(JSON.parse(json.stdout)).toEqual([
      { AccountName: ACCOUNT, DatasetName: "archive" },
      { AccountName: ACCOUNT, DatasetName: "sales" },
    ]);
  });

  it("should upload a file with a progress bar, streaming it", async () => {
    const path = join(home, "orders.csv");
    writeFileSync(path, csv);

    const result = await dqs(["upload", path, `${ACCOUNT}/sales/orders.csv`, "--progress"]);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `Registered ${ACCOUNT}/sales/orders.csv: 60000 rows, 4 columns, ${Buffer.byteLength(csv)} bytes.\n`,
    );
    const bars = result.stderr.split("\n").filter((line) => line.startsWith("Uploading orders.csv ["));
    expect(bars[0]).toMatch(/\] 0% \| 0 B of 1\.\d MB/);
    expect(bars.at(-1)).toMatch(/\[=+\] 100% \| 1\.\d MB of 1\.\d MB/);
  });

  it("should draw no progress bar when stderr is not a terminal unless asked", async () => {
    const path = join(home, "small.csv");
    writeFileSync(path, "a,b\n1,2\n");

    const result = await dqs(["upload", path, `${ACCOUNT}/sales/small.csv`]);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe("");
  });

  it("should check an upload against a schema file and print the service's message on failure", async () => {
    const schema = join(home, "schema.json");
    writeFileSync(
      schema,
      JSON.stringify({ TableDefinition: { Columns: [{ Name: "a", DataType: { DataType: "INTEGER" } }] } }),
    );
    const bad = join(home, "bad.csv");
    writeFileSync(bad, "a\n1\nseven\n");

    const result = await dqs(["upload", bad, `${ACCOUNT}/sales/bad.csv`, "--schema", schema]);

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^dqs: .*row 2.*seven/);
    const inferred = await dqs(["upload", bad, `${ACCOUNT}/sales/bad.csv`, "--schema", schema, "--infer"]);
    expect(inferred.code, inferred.stderr).toBe(0);
  });

  it("should list data items, show a schema, and download the exact bytes to a file", async () => {
    const list = await dqs(["data", "ls", `${ACCOUNT}/sales`]);
    expect(list.code, list.stderr).toBe(0);
    const [head, ...rows] = list.stdout.trimEnd().split("\n");
    expect(head).toMatch(/^NAME +ROWS +SIZE +UPLOADED +QUERY-READY$/);
    expect(rows.map((row) => row.split(/ +/)[0])).toEqual(["bad.csv", "orders.csv", "small.csv"]);
    for (const row of rows) expect(row).toMatch(/^\S+ +\d+ +\d+(\.\d)? [kM]?B +\d{4}-\d\d-\d\dT\S+Z +(yes|no)$/);

    const schema = await dqs(["schema", `${ACCOUNT}/sales/orders.csv`]);
    expect(schema.stdout).toBe(
      [
        "Format     CSV",
        "Delivery   RAW",
        "Header     yes",
        'Delimiter  ","',
        "",
        "COLUMN  TYPE     NULLABLE",
        "id      INTEGER  yes",
        "name    STRING   yes",
        "amount  DOUBLE   yes",
        "day     DATE     yes",
        "",
      ].join("\n"),
    );

    const out = join(home, "copy.csv");
    const download = await dqs(["download", `${ACCOUNT}/sales/orders.csv`, "-o", out]);
    expect(download.code, download.stderr).toBe(0);
    expect(readFileSync(out, "utf8")).toBe(csv);
    const toStdout = await dqs(["download", `${ACCOUNT}/sales/small.csv`]);
    expect(toStdout.stdout).toBe("a,b\n1,2\n");
  });

  it("should share a dataset with a grant and take it back", async () => {
    await httpRefreshToken(server.url, "e2e-cli-frank");

    const grant = await dqs(["dataset", "grant", `${ACCOUNT}/sales`, "e2e-cli-frank", "--permission", "write"]);
    expect(grant.code, grant.stderr).toBe(0);
    expect(grant.stdout).toBe(`e2e-cli-frank may now write ${ACCOUNT}/sales.\n`);
    const revoke = await dqs(["dataset", "revoke", `${ACCOUNT}/sales`, "e2e-cli-frank"]);
    expect(revoke.stdout).toBe(`e2e-cli-frank no longer has access to ${ACCOUNT}/sales.\n`);
    expect((await dqs(["dataset", "revoke", `${ACCOUNT}/sales`, "e2e-cli-frank"])).code).toBe(1);
  });

  it("should refuse to delete without --yes when nobody can be asked, and delete with it", async () => {
    const refused = await dqs(["dataset", "delete", `${ACCOUNT}/archive`]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("Pass --yes to confirm.");

    const deleted = await dqs(["dataset", "delete", `${ACCOUNT}/archive`, "--yes"]);
    expect(deleted.stdout).toBe(`Dataset ${ACCOUNT}/archive deleted.\n`);
    expect((await dqs(["data", "rm", `${ACCOUNT}/sales/small.csv`, "--yes"])).code).toBe(0);
  });

  it("should print Status.Message and exit 1 for what is not there, and the envelope with --json", async () => {
    const result = await dqs(["schema", `${ACCOUNT}/sales/missing.csv`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`dqs: Data ${ACCOUNT}/sales/missing.csv not found, or you may not access it.\n`);

    const json = await dqs(["schema", `${ACCOUNT}/sales/missing.csv`, "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      Status: { Code: 404, Message: `Data ${ACCOUNT}/sales/missing.csv not found, or you may not access it.` },
    });
    const usage = await dqs(["schema", "not-a-path"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe('dqs: Expected ACCOUNT/DATASET/NAME, got "not-a-path".\n');
  });
});

describe("queries", () => {
  beforeAll(defaultProfileLoggedIn);

  const table = () => `\`${ACCOUNT}.sales.orders.csv\``;

  it("should run a query, show its states, and write the result CSV to a file", async () => {
    const out = join(home, "top.csv");

    const result = await dqs(["query", `SELECT id, name FROM ${table()} WHERE id <= 3 ORDER BY id`, "-o", out]);

    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(out, "utf8")).toBe("id,name\n1,item 1\n2,item 2\n3,item 3\n");
    expect(result.stdout).toBe("");
    // While it waits (if it has to), one line per state; then the outcome.
    const id = /✔ Query (\S+) succeeded/.exec(result.stderr)?.[1];
    for (const line of result.stderr.split("\n").filter((text) => text.startsWith("- ")))
      expect(line).toMatch(new RegExp(`^- Query ${id} (queued|running)$`));
    expect(result.stderr).toMatch(/✔ Query \S+ succeeded: 3 rows, 35 B in \d+\.\d s/);
    expect(result.stderr).toContain(`Wrote 3 rows (csv) to ${out}.`);
  });

  it("should print the result as JSON or as an aligned table", async () => {
    const sql = `SELECT id, amount, NULL AS note FROM ${table()} WHERE id IN (2, 3) ORDER BY id`;

    const json = await dqs(["query", sql, "--format", "json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      { id: 2, amount: 1.5, note: null },
      { id: 3, amount: 3, note: null },
    ]);

    const text = await dqs(["query", sql, "--format", "table"]);
    expect(text.stdout).toBe("id  amount  note\n2   1.5     NULL\n3   3       NULL\n");
  });

  it("should print a large result as a table of its first rows without a terminal, and say how to get them all", async () => {
    // 180000 rows: a table of them all once overflowed the stack.
    const sql = `SELECT o.id, o.name FROM ${table()} o, (VALUES (1), (2), (3)) ORDER BY o.id`;
    const note = (shown: number) =>
      `${180_000 - shown} more rows not shown (180000 in all): show more with --limit N, or save them all with --format csv -o FILE.\n`;

    const first = await dqs(["query", sql, "--format", "table"]);
    expect(first.code, first.stderr).toBe(0);
    const lines = first.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(1 + 1000);
    expect(lines[0]).toMatch(/^id +name$/);
    expect(lines.slice(1, 5).map((line) => line.split(/ +/).slice(0, 2))).toEqual([
      ["1", "item"],
      ["1", "item"],
      ["1", "item"],
      ["2", "item"],
    ]);
    // Aligned: every name starts where the header's does.
    for (const line of lines) expect(line.search(/(name|item \d+)$/)).toBe(lines[0]!.indexOf("name"));
    expect(first.stderr.endsWith(note(1000))).toBe(true);

    const many = await dqs(["query", sql, "--format", "table", "--limit", "150000"]);
    expect(many.code, many.stderr).toBe(0);
    expect(many.stdout.trimEnd().split("\n")).toHaveLength(1 + 150_000);
    expect(many.stderr.endsWith(note(150_000))).toBe(true);

    const csv = await dqs(["query", "SELECT 1 AS one", "--limit", "5"]);
    expect(csv.code).toBe(2);
    expect(csv.stderr).toBe("dqs: --limit is for the table format; csv holds every row (add --format table).\n");
  });

  terminalTest("should show a screenful at a terminal, its columns cut to the terminal's width", async () => {
    const sql = `SELECT id, name, replace(hex(zeroblob(40)), '0', 'x') AS wide, day FROM ${table()} ORDER BY id`;

    const { code, lines } = await runCliAtTerminal(cli, ["query", sql], {
      home,
      env: { DQS_URL: server.url },
      rows: 20,
      columns: 60,
    });

    expect(code, lines.join("\n")).toBe(0);
    const header = lines.findIndex((line) => /^id +name +wide +day$/.test(line));
    expect(header, lines.join("\n")).toBeGreaterThan(-1);
    // 20 lines: the query's summary, the header, 16 rows, the note, and the prompt.
    const rows = lines.slice(header + 1, header + 17);
    expect(rows.map((row) => row.split(/ +/)[0])).toEqual(Array.from({ length: 16 }, (_, i) => String(i + 1)));
    for (const line of [lines[header]!, ...rows]) expect(line.length).toBeLessThanOrEqual(60);
    for (const row of rows) expect(row).toMatch(/^\d+ +item \d+ +x+… +2024-01-\d\d$/);
    expect(lines[header + 17]).toBe(
      "59984 more rows not shown (60000 in all): show more with --limit N, or save them all with --format csv -o FILE.",
    );
  });

  it("should exit 4 with the reason when the query fails", async () => {
    const result = await dqs(["query", `SELECT nope FROM ${table()}`]);

    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^dqs: Query \S+ failed: .*nope/m);
    // Its status shows what it has, and no label without a value (it has no rows, size or timings of a result).
    const id = /Query (\S+) failed/.exec(result.stderr)![1]!;
    const status = await dqs(["status", id]);
    const lines = status.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(new RegExp(`^Query +${id}$`));
    expect(lines).toContainEqual(expect.stringMatching(/^Status +failed$/));
    for (const line of lines) expect(line).toMatch(/^\S+ {2,}\S/);
  });

  it("should submit without waiting, then show the status, list the query, and refuse to cancel it once ended", async () => {
    const submitted = await dqs(["query", `SELECT count(*) AS n FROM ${table()}`, "--no-wait"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    expect(id).toMatch(/^[\w-]{22}$/);
    // --wait 0 is the same as --no-wait; a negative wait is a usage error.
    const zero = await dqs(["query", `SELECT 1 AS one FROM ${table()}`, "--wait", "0"]);
    expect(zero.code, zero.stderr).toBe(0);
    expect(zero.stdout.trim()).toMatch(/^[\w-]{22}$/);
    const negative = await dqs(["query", "SELECT 1", "--wait", "-1"]);
    expect(negative.code).toBe(2);
    expect(negative.stderr).toBe("dqs: --wait must be a number of seconds (0: do not wait).\n");

    let status = await dqs(["status", id, "--json"]);
    for (let i = 0; i < 100 && JSON.parse(status.stdout).Status !== "succeeded"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await dqs(["status", id, "--json"]);
    }
    expect(JSON.parse(status.stdout)).toMatchObject({ QueryId: id, Status: "succeeded", RowCount: 1 });
    const human = await dqs(["status", id]);
    expect(human.stdout).toMatch(new RegExp(`^Query +${id}\nStatus +succeeded\nMessage +Succeeded: 1 row,`));

    const cancel = await dqs(["cancel", id]);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toBe(`dqs: Query ${id} has already ended (succeeded); nothing to cancel.\n`);
    const list = await dqs(["queries", "--json", "--limit", "100"]);
    const queries = (JSON.parse(list.stdout) as { Queries: { QueryId: string }[] }).Queries;
    expect(queries.map((q) => q.QueryId)).toContain(id);
    const listed = await dqs(["queries", "--limit", "1"]);
    expect(listed.stdout).toMatch(/^QUERY ID +STATUS +CREATED +ROWS +SIZE +SQL\n\S{22} +succeeded /);
  });

  it("should cancel a running query: the waiting dqs query stops with exit 4, and its status says cancelled", async () => {
    const waiting = startCli(cli, ["query", COUNTING_SQL], { home, env: { DQS_URL: server.url } });
    const [, id] = await waiting.waitForStderr(/^- Query (\S+) running$/m, 60_000);

    const cancel = await dqs(["cancel", id!]);

    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toBe(`Query ${id} is cancelled.\n`);
    const result = await waiting.result;
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(`dqs: Query ${id} cancelled: Cancelled by its owner.\n`);
    expect(result.stdout).toBe("");
    const status = await dqs(["status", id!, "--json"]);
    expect(JSON.parse(status.stdout)).toMatchObject({ QueryId: id, Status: "cancelled", Size: 0 });
    const again = await dqs(["cancel", id!]);
    expect(again.stderr).toBe(`dqs: Query ${id} has already ended (cancelled); nothing to cancel.\n`);
  });
});

describe("dqs logout", () => {
  beforeAll(defaultProfileLoggedIn);

  it("should revoke the session and remove the profile, after which commands exit 3", async () => {
    const token = readTokenFile(home).Default!.AccessToken!;

    const result = await dqs(["logout"]);

    expect(result.code, result.stderr).toBe(0);
    expect(readTokenFile(home).Default).toBeUndefined();
    const afterwards = await fetch(`${server.url}/v1/me/datasets`, { headers: { authorization: `Bearer ${token}` } });
    expect(afterwards.status).toBe(401);
    expect((await dqs(["datasets"])).code).toBe(3);
    // Without DQS_URL too: the profile's URL went with it, and the answer is still "not logged in".
    const bare = await runCli(cli, ["datasets"], { home });
    expect(bare.code).toBe(3);
    expect(bare.stderr).toMatch(/^dqs: Not logged in \(profile Default\)/);
    expect(tokenFileMode(home)).toBe(0o600);
  });
});
