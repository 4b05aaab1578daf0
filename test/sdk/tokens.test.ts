import { describe, expect, it } from "vitest";
import {
  DqsApiError,
  DqsClient,
  MemoryTokenStore,
  NotLoggedInError,
  type TokenSet,
  type TokenStore,
} from "../../src/sdk";
import { call, ORIGIN } from "../support/http";
import { authHeader, login } from "../support/login";
import { loggedInClient, recordingFetch, tokenSet, uniqueUser } from "./support";

const SOON = () => new Date(Date.now() + 20_000);
const LATER = () => new Date(Date.now() + 3_600_000);

/** A memory store that counts how often the SDK asks for its lock. */
class CountingStore extends MemoryTokenStore implements TokenStore {
  locks = 0;

  async exclusive<T>(work: () => Promise<T>): Promise<T> {
    this.locks++;
    return work();
  }
}

describe("token renewal", () => {
  it("should renew the access token before it expires and call with the new one", async () => {
    const { fetch, sent } = recordingFetch();
    const { client, store, tokens } = await loggedInClient("sdk-soon", { fetch });
    await store.save({ ...tokens, accessTokenExpiresAt: SOON() });

    await client.myDatasets();

    const renewed = (await store.load())!;
    expect(sent.map((s) => [s.method, s.path, s.status])).toEqual([
      ["POST", "/v1/auth/token", 200],
      ["GET", "/v1/me/datasets", 200],
    ]);
    expect(sent[1]!.authorization).toBe(`Bearer ${renewed.accessToken}`);
    expect(renewed.refreshToken).not.toBe(tokens.refreshToken);
    expect(renewed.accessTokenExpiresAt.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it("should renew once after a 401 and repeat the call", async () => {
    const { fetch, sent } = recordingFetch();
    const { client, store, tokens } = await loggedInClient("sdk-401", { fetch });
    await store.save({ ...tokens, accessToken: "not-a-valid-token", accessTokenExpiresAt: LATER() });

    expect(await client.myDatasets()).toEqual([]);

    expect(sent.map((s) => [s.path, s.status])).toEqual([
      ["/v1/me/datasets", 401],
      ["/v1/auth/token", 200],
      ["/v1/me/datasets", 200],
    ]);
  });

  it("should retry an upload of a Blob after a 401, but not a spent stream", async () => {
    const { client, store, tokens, account } = await loggedInClient("sdk-up401");
    await client.createDataset(account, "d");
    await store.save({ ...tokens, accessToken: "stale", accessTokenExpiresAt: LATER() });
    expect(await client.upload(account, "d", "a.csv", new Blob(["a\n1\n"]))).toContain("1 row,");

    const renewed = (await store.load())!;
    await store.save({ ...renewed, accessToken: "stale", accessTokenExpiresAt: LATER() });
    const streamed = client.upload(account, "d", "b.csv", new Blob(["a\n1\n"]).stream(), { size: 4 });
    await expect(streamed).rejects.toMatchObject({ code: 401 });
  });

  it("should give up with the service's message when the renewal itself is refused", async () => {
    const { fetch, sent } = recordingFetch();
    const { client, store, tokens } = await loggedInClient("sdk-ended", { fetch });
    await client.logout();
    await store.save({ ...tokens, accessTokenExpiresAt: LATER() });

    const error = await client.myDatasets().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({ code: 401, message: expect.stringContaining("session") });
    expect(sent.filter((s) => s.path === "/v1/auth/token")).toHaveLength(1);
  });

  it("should renew only once for calls made together, inside the store's lock", async () => {
    const { fetch, sent } = recordingFetch();
    const store = new CountingStore();
    const { client, tokens } = await loggedInClient("sdk-race", { fetch, store });
    await store.save({ ...tokens, accessTokenExpiresAt: SOON() });

    await Promise.all([client.myDatasets(), client.myDatasets(), client.myDatasets()]);

    expect(sent.filter((s) => s.path === "/v1/auth/token")).toHaveLength(1);
    expect(store.locks).toBe(1);
  });

  it("should use tokens another process renewed while it waited for the lock, without spending the old refresh token", async () => {
    const { fetch, sent } = recordingFetch();
    const account = uniqueUser("sdk-other");
    const stale = tokenSet(await login(account));
    let renewedElsewhere: TokenSet | null = null;
    const store: TokenStore = new MemoryTokenStore({ ...stale, accessTokenExpiresAt: SOON() });
    store.exclusive = async <T>(work: () => Promise<T>): Promise<T> => {
      // Another process held the lock and renewed first.
      const other = new DqsClient({ baseUrl: ORIGIN, tokens: new MemoryTokenStore(stale), fetch });
      renewedElsewhere = await other.refresh();
      await store.save(renewedElsewhere);
      sent.length = 0;
      return work();
    };
    const client = new DqsClient({ baseUrl: ORIGIN, tokens: store, fetch });

    await client.myDatasets();

    expect(sent.map((s) => s.path)).toEqual(["/v1/me/datasets"]);
    expect(sent[0]!.authorization).toBe(`Bearer ${renewedElsewhere!.accessToken}`);
  });

  it("should renew on demand with refresh() and spend the refresh token", async () => {
    const { client, store, tokens } = await loggedInClient("sdk-manual");

    const renewed = await client.refresh();

    expect(await store.load()).toEqual(renewed);
    await expect(client.loginWithRefreshToken(tokens.refreshToken)).rejects.toMatchObject({ code: 401 });
  });
});

describe("without tokens, and after logout", () => {
  it("should refuse calls without tokens with a NotLoggedInError", async () => {
    const client = new DqsClient({ baseUrl: `${ORIGIN}/v1`, fetch: recordingFetch().fetch });

    const error = await client.myDatasets().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(NotLoggedInError);
    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({ code: 401 });
  });

  it("should log in with a pasted refresh token", async () => {
    const loggedIn = await login(uniqueUser("sdk-paste"));
    const store = new MemoryTokenStore();
    const client = new DqsClient({ baseUrl: ORIGIN, tokens: store, fetch: recordingFetch().fetch });

    await client.loginWithRefreshToken(loggedIn.refreshToken);

    expect(await client.myDatasets()).toEqual([]);
    expect((await store.load())?.refreshToken).not.toBe(loggedIn.refreshToken);
  });

  it("should revoke the session on logout and forget the tokens", async () => {
    const { client, store, tokens } = await loggedInClient("sdk-logout");

    await client.logout();

    expect(await store.load()).toBeNull();
    expect((await call("/v1/me/datasets", { headers: authHeader(tokens.accessToken) })).status).toBe(401);
    await expect(client.logout()).resolves.toBeUndefined();
  });
});
