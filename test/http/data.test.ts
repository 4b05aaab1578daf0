import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createDataset, uploadOk } from "../support/catalog";
import { call, dbFailing, readEnvelope, workerWith } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login("data_routes");
  await createDataset(owner.accessToken, owner.accountName, "kept");
  await uploadOk(owner.accessToken, `${owner.accountName}/kept/item.csv`, "id\n1\n");
});

afterEach(() => {
  vi.restoreAllMocks();
});

function deleteData(path: string, via = workerWith({})): Promise<Response> {
  return call(`/v1/data/${path}`, { method: "DELETE", headers: authHeader(owner.accessToken) }, via);
}

describe("DELETE /v1/data/{AccountName}/{DatasetName}/{DataName}", () => {
  it("should answer 404 for a dataset that does not exist", async () => {
    const body = await readEnvelope(await deleteData(`${owner.accountName}/no_such_dataset/item.csv`), 404);

    expect(body.Status.Message).toBe(
      `Data ${owner.accountName}/no_such_dataset/item.csv not found, or you may not access it.`,
    );
  });

  it("should answer 500, not 404, when the catalog cannot be read, and keep the data", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const outage = workerWith({ DB: dbFailing(/FROM datasets d JOIN accounts/) });

    const body = await readEnvelope(await deleteData(`${owner.accountName}/kept/item.csv`, outage), 500);

    expect(body.Status.Message).toMatch(/^Internal error; if it persists, report request id /);
    expect(errors.mock.calls.map(([line]) => String(line)).join("\n")).toContain("D1 is unavailable");
    const schema = await call(`/v1/data/${owner.accountName}/kept/item.csv/metadata/schema`, {
      headers: authHeader(owner.accessToken),
    });
    await readEnvelope(schema, 200);
  });
});
