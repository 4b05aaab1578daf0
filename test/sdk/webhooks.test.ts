import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DqsApiError } from "../../src/sdk";
import { eventually } from "../support/query";
import { loggedInClient } from "./support";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("completion webhooks through the SDK", () => {
  it("should pass query({ callback }) on, and show the signed delivery in the status", async () => {
    const { client } = await loggedInClient("sdk-hook");
    const url = `http://127.0.0.1:9/${crypto.randomUUID()}`;
    const bodies: { body: string; headers: Record<string, string> }[] = [];
    const realFetch = globalThis.fetch;
    // The Worker's delivery (its webhook queue runs in this isolate) is answered here instead of on a port.
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      if (String(input) !== url) return realFetch(input, init);
      bodies.push({ body: String(init?.body), headers: Object.fromEntries(new Headers(init?.headers).entries()) });
      return new Response(null, { status: 200 });
    });

    const result = await client.query("SELECT 7 AS seven", { callback: url, wait: 60 });
    const status = await eventually(
      () => client.queryStatus(result.queryId),
      (s) => s.Callback?.LastDelivery?.Delivered === true,
    );

    expect(result.rows).toEqual([{ seven: 7 }]);
    expect(status.Callback).toMatchObject({ Url: url, LastDelivery: { Attempt: 1, StatusCode: 200, Error: null } });
    expect(bodies).toHaveLength(1);
    expect(new Webhook(await client.webhookSecret()).verify(bodies[0]!.body, bodies[0]!.headers)).toMatchObject({
      QueryId: result.queryId,
      Status: "succeeded",
    });
  });

  it("should read and rotate the webhook secret", async () => {
    const { client } = await loggedInClient("sdk-hook-secret");

    const first = await client.webhookSecret();
    const rotated = await client.rotateWebhookSecret();

    expect(first).toMatch(/^whsec_/);
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(first);
    expect(await client.webhookSecret()).toBe(rotated);
  });

  it("should throw the service's 400 for a callback URL the rules refuse", async () => {
    const { client } = await loggedInClient("sdk-hook-refused");

    const error = await client.submitQuery("SELECT 1", { callback: "http://10.0.0.1/hook" }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({ code: 400, message: expect.stringMatching(/^Callback\.Url must use https/) });
  });
});
