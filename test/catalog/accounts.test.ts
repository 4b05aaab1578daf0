import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { acceptTerms, findOrCreateUser, findUserById, type IdentityClaims } from "../../src/worker/catalog/accounts";
import { isAccountName } from "../../src/worker/catalog/names";

const NOW = "2026-11-22T07:00:00Z";
const ISSUER = "https://idp.example.test";

function identity(subject: string, claims: Partial<IdentityClaims> = {}): IdentityClaims {
  return { issuer: ISSUER, subject, ...claims };
}

async function accountsNamed(prefix: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT name FROM accounts WHERE name LIKE ? ORDER BY name")
    .bind(`${prefix}%`)
    .all<{ name: string }>();
  return results.map((row) => row.name);
}

describe("findOrCreateUser", () => {
  it("should create a personal account named after preferred_username", async () => {
    const user = await findOrCreateUser(env.DB, identity("s-alice", { preferredUsername: "acc-alice" }), NOW);

    expect(user).toMatchObject({ accountName: "acc-alice", termsVersion: null });
    const row = await env.DB.prepare(
      "SELECT a.name, a.kind, u.issuer, u.subject FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.id = ?",
    )
      .bind(user.userId)
      .first();
    expect(row).toEqual({ name: "acc-alice", kind: "user", issuer: ISSUER, subject: "s-alice" });
  });

  it("should keep a valid name exactly as it is, case included", async () => {
    const user = await findOrCreateUser(env.DB, identity("s-case", { preferredUsername: "Acc_Case-01" }), NOW);

    expect(user.accountName).toBe("Acc_Case-01");
  });

  it("should use the e-mail's local part when there is no preferred_username", async () => {
    const user = await findOrCreateUser(env.DB, identity("s-mail", { email: "acc-bob@example.com" }), NOW);

    expect(user.accountName).toBe("acc-bob");
  });

  it("should find the same user again on a later login without creating another account", async () => {
    const first = await findOrCreateUser(env.DB, identity("s-again", { preferredUsername: "acc-again" }), NOW);

    const second = await findOrCreateUser(env.DB, identity("s-again", { preferredUsername: "acc-renamed" }), NOW);

    expect(second).toEqual(first);
    expect(await accountsNamed("acc-again")).toEqual(["acc-again"]);
    expect(await accountsNamed("acc-renamed")).toEqual([]);
  });

  it("should sanitize a name that breaks the rules", async () => {
    const user = await findOrCreateUser(env.DB, identity("s-dots", { preferredUsername: "acc.jane doe!" }), NOW);

    expect(user.accountName).toBe("acc-jane-doe");
  });

  it("should always produce a name that meets the rules", async () => {
    const wanted = ["acc ünïcödé", "—acc—", "acc/../etc", "acc\u0000nul", "𝒶𝒸𝒸-math"];
    for (const [i, preferredUsername] of wanted.entries()) {
      const user = await findOrCreateUser(env.DB, identity(`s-rules-${i}`, { preferredUsername }), NOW);
      expect(isAccountName(user.accountName), `${preferredUsername} → ${user.accountName}`).toBe(true);
    }
  });

  it("should fall back to a generic name when nothing of the wanted name is usable", async () => {
    const user = await findOrCreateUser(env.DB, identity("s-empty", { preferredUsername: "!!!" }), NOW);

    expect(user.accountName).toMatch(/^user(-\d+)?$/);
  });

  it("should cut a long name to 64 characters", async () => {
    const user = await findOrCreateUser(
      env.DB,
      identity("s-long", { preferredUsername: `acc.${"x".repeat(100)}` }),
      NOW,
    );

    expect(user.accountName).toBe(`acc-${"x".repeat(60)}`);
  });

  it("should add a numeric suffix when the name is taken, counting up", async () => {
    const first = await findOrCreateUser(env.DB, identity("s-dup-1", { preferredUsername: "acc-dup" }), NOW);
    const second = await findOrCreateUser(env.DB, identity("s-dup-2", { preferredUsername: "acc-dup" }), NOW);
    const third = await findOrCreateUser(env.DB, identity("s-dup-3", { preferredUsername: "acc.dup" }), NOW);

    expect([first.accountName, second.accountName, third.accountName]).toEqual(["acc-dup", "acc-dup-2", "acc-dup-3"]);
    expect(new Set([first.userId, second.userId, third.userId]).size).toBe(3);
  });

  it("should keep a suffixed name within 64 characters", async () => {
    const name = `acc${"y".repeat(61)}`;
    await findOrCreateUser(env.DB, identity("s-full-1", { preferredUsername: name }), NOW);

    const second = await findOrCreateUser(env.DB, identity("s-full-2", { preferredUsername: name }), NOW);

    expect(second.accountName).toBe(`${name.slice(0, 62)}-2`);
    expect(isAccountName(second.accountName)).toBe(true);
  });

  it("should tell apart two providers' users with the same subject", async () => {
    const here = await findOrCreateUser(env.DB, identity("s-shared", { preferredUsername: "acc-shared" }), NOW);

    const there = await findOrCreateUser(
      env.DB,
      { issuer: "https://other-idp.example.test", subject: "s-shared", preferredUsername: "acc-shared" },
      NOW,
    );

    expect(there.userId).not.toBe(here.userId);
    expect(there.accountName).toBe("acc-shared-2");
  });

  it("should create one user when the same person logs in twice at once", async () => {
    const claims = identity("s-race", { preferredUsername: "acc-race" });

    const [one, two] = await Promise.all([
      findOrCreateUser(env.DB, claims, NOW),
      findOrCreateUser(env.DB, claims, NOW),
    ]);

    expect(two).toEqual(one);
    expect(await accountsNamed("acc-race")).toEqual(["acc-race"]);
  });
});

describe("acceptTerms", () => {
  it("should record the accepted version on the user", async () => {
    const user = await findOrCreateUser(env.DB, identity("s-terms", { preferredUsername: "acc-terms" }), NOW);

    await acceptTerms(env.DB, user.userId, "7", NOW);

    expect(await findUserById(env.DB, user.userId)).toEqual({ ...user, termsVersion: "7" });
  });
});

describe("findUserById", () => {
  it("should answer null for an unknown user", async () => {
    expect(await findUserById(env.DB, "no-such-user")).toBeNull();
  });
});
