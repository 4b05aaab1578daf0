import { DurableObject } from "cloudflare:workers";
import { settings, type FairShare } from "../config";
import type { QueryMessage } from "./queries";

const KEY = "slots";
/** After a failed send to the queue, the admission is tried again this much later. */
const RETRY_SEND_MS = 5_000;

interface Slots {
  /** Queries handed to the queue, with when; each holds a slot until it ends. */
  admitted: { queryId: string; at: number }[];
  /** Queries waiting for a slot, oldest first. */
  waiting: string[];
  share: FairShare;
}

export type EnterResult = { ok: true; admitted: boolean; ahead: number } | { ok: false; waiting: number };

/**
 * One user's share of the engine (DECISIONS §8): at most `maxRunning` of
 * their queries are in the queue or running at once, the rest wait here in
 * the order they came, and at most `maxWaiting` may wait. A burst of one
 * user therefore never puts more than `maxRunning` queries ahead of
 * another user's. It owns the slots and nothing else; QueryState reports
 * every query's end (`leave`), which hands the slot to the next waiting
 * query by sending it to the queue. A send that fails, and a slot whose
 * lease runs out, are retried from the alarm, so no waiting query is lost.
 * Each call runs alone (`exclusive`): a send to the queue is not storage,
 * so without that another call could interleave and one of them lose its
 * write.
 */
export class UserQueries extends DurableObject<Env> {
  private async load(share?: FairShare): Promise<Slots> {
    const slots = (await this.ctx.storage.get<Slots>(KEY)) ?? { admitted: [], waiting: [], share: share! };
    if (share) slots.share = share;
    // Slots whose end was never reported are taken back.
    const now = Date.now();
    slots.admitted = slots.admitted.filter((slot) => now - slot.at < slots.share.leaseMs);
    return slots;
  }

  /**
   * A new query asks for a slot: admitted at once (the caller sends it to the
   * queue), or put in line (`ahead` queries before it), or refused when the
   * line is full.
   */
  enter(queryId: string, share: FairShare): Promise<EnterResult> {
    return this.exclusive(() => this.enterNow(queryId, share));
  }

  private async enterNow(queryId: string, share: FairShare): Promise<EnterResult> {
    const slots = await this.load(share);
    if (slots.admitted.some((slot) => slot.queryId === queryId)) return { ok: true, admitted: true, ahead: 0 };
    const known = slots.waiting.indexOf(queryId);
    if (known >= 0) return { ok: true, admitted: false, ahead: known };
    if (slots.admitted.length < share.maxRunning && slots.waiting.length === 0) {
      slots.admitted.push({ queryId, at: Date.now() });
      await this.ctx.storage.put(KEY, slots);
      return { ok: true, admitted: true, ahead: 0 };
    }
    if (slots.waiting.length >= share.maxWaiting) return { ok: false, waiting: slots.waiting.length };
    slots.waiting.push(queryId);
    await this.promote(slots);
    return { ok: true, admitted: false, ahead: slots.waiting.indexOf(queryId) };
  }

  /** How many of the user's queries wait before this one; null when it is not waiting. */
  async ahead(queryId: string): Promise<number | null> {
    const slots = (await this.ctx.storage.get<Slots>(KEY)) ?? null;
    const index = slots?.waiting.indexOf(queryId) ?? -1;
    return index >= 0 ? index : null;
  }

  /** A query ended (or was cancelled while it waited): its slot goes to the next waiting query. */
  leave(queryId: string): Promise<void> {
    return this.exclusive(async () => {
      if (!(await this.ctx.storage.get<Slots>(KEY))) return;
      const slots = await this.load();
      slots.admitted = slots.admitted.filter((slot) => slot.queryId !== queryId);
      slots.waiting = slots.waiting.filter((id) => id !== queryId);
      await this.promote(slots);
    });
  }

  /** A query began to run: its slot's lease counts from now (it may have waited in a long queue). */
  started(queryId: string): Promise<void> {
    return this.exclusive(async () => {
      const slots = await this.ctx.storage.get<Slots>(KEY);
      const slot = slots?.admitted.find((slot) => slot.queryId === queryId);
      if (!slots || !slot) return;
      slot.at = Date.now();
      await this.ctx.storage.put(KEY, slots);
    });
  }

  /**
   * A query still queued after a long while: sent again if it holds a slot
   * (a request that died before sending it; a second delivery is claimed
   * once), put back in line if its slot was taken back (or it never had
   * one), left alone if it waits.
   */
  recover(queryId: string): Promise<void> {
    return this.exclusive(async () => {
      // No share stored: the submit's `enter` never got through; the deployment's share applies.
      const stored = await this.ctx.storage.get<Slots>(KEY);
      const slots = await this.load(stored ? undefined : settings(this.env).fairShare);
      if (slots.waiting.includes(queryId)) return;
      if (slots.admitted.some((slot) => slot.queryId === queryId)) {
        await this.env.QUERY_QUEUE.send({ queryId } satisfies QueryMessage);
        return;
      }
      slots.waiting.push(queryId);
      await this.promote(slots);
    });
  }

  /** Retries a failed send, and takes back slots whose lease ran out. */
  override alarm(): Promise<void> {
    return this.exclusive(async () => {
      if (await this.ctx.storage.get<Slots>(KEY)) await this.promote(await this.load());
    });
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.ctx.blockConcurrencyWhile(work);
  }

  /**
   * Gives free slots to the oldest waiting queries and sends them to the
   * queue (a query sent twice is claimed once), then stores the slots. While
   * queries wait, the alarm is set for when the oldest lease runs out.
   */
  private async promote(slots: Slots): Promise<void> {
    const next: string[] = [];
    while (slots.admitted.length < slots.share.maxRunning && slots.waiting.length > 0) {
      const queryId = slots.waiting.shift()!;
      slots.admitted.push({ queryId, at: Date.now() });
      next.push(queryId);
    }
    let retryAt: number | null = null;
    if (next.length > 0) {
      try {
        await this.env.QUERY_QUEUE.sendBatch(next.map((queryId) => ({ body: { queryId } satisfies QueryMessage })));
      } catch (error) {
        console.error(JSON.stringify({ step: "admit waiting queries", queries: next, error: String(error) }));
        slots.admitted = slots.admitted.filter((slot) => !next.includes(slot.queryId));
        slots.waiting.unshift(...next);
        retryAt = Date.now() + RETRY_SEND_MS;
      }
    }
    await this.ctx.storage.put(KEY, slots);
    const leaseEnds = Math.min(...slots.admitted.map((slot) => slot.at + slots.share.leaseMs));
    if (retryAt !== null) await this.ctx.storage.setAlarm(retryAt);
    else if (slots.waiting.length > 0 && Number.isFinite(leaseEnds)) await this.ctx.storage.setAlarm(leaseEnds);
    else await this.ctx.storage.deleteAlarm();
  }
}
