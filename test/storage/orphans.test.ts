import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { storeEmptier } from "../../src/worker/query/store/store-state";
import { deleteOrphanNow, markOrphan, sweepOrphans } from "../../src/worker/storage/orphans";
import { orphansUnder, uniqueName } from "../support/catalog";

const NOW = "2026-11-22T12:00:00Z";
const PAST = "2026-11-22T11:00:00Z";
const LONG_AGO = "2026-11-21T11:00:00Z";
const FUTURE = "2026-11-22T13:00:00Z";

let prefix: string;

beforeEach(async () => {
  await env.DB.prepare("DELETE FROM orphan_objects").run();
  prefix = `${uniqueName("orphans")}/`;
});

async function storedObject(name: string): Promise<string> {
  const key = `${prefix}${name}`;
  await env.BUCKET.put(key, `bytes of ${name}`);
  return key;
}

describe("markOrphan", () => {
  it("should list an object, and relist it with the latest reason and time", async () => {
    const key = await storedObject("a");

    await markOrphan(env.DB, key, "upload in progress", FUTURE);
    await markOrphan(env.DB, key, "replaced by a new version", PAST);

    expect(await orphansUnder(prefix)).toEqual([
      { objectKey: key, reason: "replaced by a new version", deleteAfter: PAST },
    ]);
  });
});

describe("sweepOrphans", () => {
  it("should delete the objects whose time has come, from R2 and from the list, and keep the others", async () => {
    const due = await storedObject("due");
    const alsoDue = await storedObject("also-due");
    const notYet = await storedObject("not-yet");
    await markOrphan(env.DB, due, "data item deleted", PAST);
    await markOrphan(env.DB, alsoDue, "dataset deleted", NOW);
    await markOrphan(env.DB, notYet, "replaced by a new version", FUTURE);

    expect(await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), NOW)).toBe(2);

    expect(await env.BUCKET.head(due)).toBeNull();
    expect(await env.BUCKET.head(alsoDue)).toBeNull();
    expect(await env.BUCKET.head(notYet)).not.toBeNull();
    expect((await orphansUnder(prefix)).map((row) => row.objectKey)).toEqual([notYet]);
  });

  it("should take the oldest first, at most the limit, and leave the rest for the next run", async () => {
    const older = await storedObject("older");
    const newer = await storedObject("newer");
    await markOrphan(env.DB, newer, "dataset deleted", PAST);
    await markOrphan(env.DB, older, "dataset deleted", LONG_AGO);

    expect(await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), NOW, 1)).toBe(1);

    expect(await env.BUCKET.head(older)).toBeNull();
    expect(await env.BUCKET.head(newer)).not.toBeNull();
    expect(await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), NOW, 1)).toBe(1);
    expect(await env.BUCKET.head(newer)).toBeNull();
    expect(await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), NOW, 1)).toBe(0);
  });

  it("should forget an orphan whose object is already gone", async () => {
    const key = `${prefix}never-written`;
    await markOrphan(env.DB, key, "upload in progress", PAST);

    expect(await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), NOW)).toBe(1);

    expect(await orphansUnder(prefix)).toEqual([]);
  });
});

describe("deleteOrphanNow", () => {
  it("should delete the object and its row at once, whatever its time", async () => {
    const key = await storedObject("now");
    await markOrphan(env.DB, key, "upload in progress", FUTURE);

    await deleteOrphanNow(env.DB, env.BUCKET, key);

    expect(await env.BUCKET.head(key)).toBeNull();
    expect(await orphansUnder(prefix)).toEqual([]);
  });
});
