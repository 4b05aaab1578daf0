import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// The README's quick start is what a new user copies first: its curl block runs, as written, against the local
// service, from a folder holding an orders.csv (only the base URL and the QueryId are filled in).

const README = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
const ORDERS =
  "id,customer,amount,day\n1,ann,10.5,2024-01-02\n2,bob,3,2024-01-05\n3,ann,7.25,2024-02-10\n4,cy,12.0,2024-03-01\n";

/** The shell block right after the quick start's "Then, with `curl`:". */
function quickStartCurl(): string {
  const after = README.slice(README.indexOf("Then, with `curl`:"));
  const block = after.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error("the README's quick start has no curl block after “Then, with `curl`:”");
  return block;
}

let server: DevServer;
let folder: string;

beforeAll(async () => {
  server = await startWranglerDev();
  folder = mkdtempSync(join(tmpdir(), "dqs-readme-"));
  writeFileSync(join(folder, "orders.csv"), ORDERS);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe("the README's quick start", () => {
  it("should run its curl block as written: create, upload, schema round trip, query, status, results", async () => {
    const { accessToken } = await httpLogin(server.url, "alice");
    const script = quickStartCurl()
      .replace("B=http://localhost:8787", `B=${server.url}`)
      // The QueryId the query line prints, for the lines after it.
      .replace(/(\$B\/v1\/query)(\s+# → QueryId)/, "$1 | tee query.json; ID=$(jq -r .Data.QueryId query.json)$2");
    const run = spawnSync("bash", ["-euo", "pipefail", "-c", script.replace(/\bcurl\b/g, "curl -sSf")], {
      cwd: folder,
      env: { ...process.env, TOKEN: accessToken },
      encoding: "utf8",
      timeout: 60_000,
    });

    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    // The schema the user saved is the generated one, as JSON, and the upload with it was taken.
    const schema = JSON.parse(readFileSync(join(folder, "schema.json"), "utf8")) as unknown;
    expect(JSON.stringify(schema)).toContain("customer");
    const answer = JSON.parse(readFileSync(join(folder, "query.json"), "utf8")) as {
      Data: { Status: string; FirstPage?: { Rows: unknown[][] } };
    };
    expect(answer.Data.Status).toBe("succeeded");
    expect(answer.Data.FirstPage?.Rows).toEqual([[4]]);
    expect(readFileSync(join(folder, "result.parquet")).subarray(0, 4).toString()).toBe("PAR1");
  });
});
