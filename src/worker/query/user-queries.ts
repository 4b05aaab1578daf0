import { DurableObject } from "cloudflare:workers";
import { settings, type FairShare } from "../config";
import type { QueryMessage } from "./queries";

const KEY = "slots";
/** After a failed send to the queue, the admission is tried again this much later. */
const RETRY_SEND_MS = 5_000;
/** A cool-down doubles with each further overrun up to this many times its base: long enough to matter, never a lockout. */
const MAX_COOL_DOWN_FACTOR = 16;

interface Slots {
  /** Queries handed to the queue, with when; each holds a slot until it ends. */
  admitted: { queryId: string; at: number }[];
  /** Queries waiting for a slot, oldest first. */
  waiting: string[];
  share: FairShare;
  /** The latest cool-down after an overrun of the time limit: none of the user's queries is admitted before `until`. */
  coolDown?: { until: number; ms: number } | null;
}

export type EnterResult = { ok: true; admitted: boolean; ahead: number } | { ok: false; waiting: number };

/** Where a waiting query stands: how many of its owner's queries wait before it, and the end (epoch ms) of a cool-down. */
export interface Turn {
  ahead: number;
  coolDownUntil: number | null;
  /** The queries holding the owner's slots now. */
  running: string[];
}

/** How a query ended, as far as its owner's share cares. */
export interface Leaving {
  /** It ran, or would have run, past the time limit (run-limits.ts overranTimeLimit): a cool-down starts. */
  overran: boolean;
}

/**
 * One user's share of the engine (docs/api.md): at most `maxRunning` of
 * their queries are in the queue or running at once, the rest wait here in
 * the order they came, and at most `maxWaiting` may wait. A burst of one
 * user therefore never puts more than `maxRunning` queries ahead of
 * another user's. It owns the slots and nothing else; QueryState reports
 * every query's end (`leave`), which hands the slot to the next waiting
 * query by sending it to the queue. A send that fails, and a slot whose
 * lease runs out, are retried from the alarm, so no waiting query is lost.
 * A query that overran the time limit starts a cool-down: until it ends,
 * none of the user's queries is admitted, so a user whose work runs away
 * keeps their slots idle rather than taking engine time from other users;
 * the alarm admits the line when it ends.
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
    if (slots.admitted.length < share.maxRunning && slots.waiting.length === 0 && !coolingDown(slots)) {
      slots.admitted.push({ queryId, at: Date.now() });
      await this.ctx.storage.put(KEY, slots);
      return { ok: true, admitted: true, ahead: 0 };
    }
    if (slots.waiting.length >= share.maxWaiting) return { ok: false, waiting: slots.waiting.length };
    slots.waiting.push(queryId);
    await this.promote(slots);
    return { ok: true, admitted: false, ahead: slots.waiting.indexOf(queryId) };
  }

  /** Where a waiting query stands (its owner's queries before it, a cool-down); null when it is not waiting. */
  async turn(queryId: string): Promise<Turn | null> {
    const slots = (await this.ctx.storage.get<Slots>(KEY)) ?? null;
    const index = slots?.waiting.indexOf(queryId) ?? -1;
    if (!slots || index < 0) return null;
    return {
      ahead: index,
      coolDownUntil: coolingDown(slots) ? slots.coolDown!.until : null,
      running: slots.admitted.map((slot) => slot.queryId),
    };
  }

  /**
   * A query ended (or was cancelled while it waited): its slot goes to the
   * next waiting query, unless it overran the time limit, which starts a
   * cool-down (or lengthens the one in force).
   */
  leave(queryId: string, end: Leaving = { overran: false }): Promise<void> {
    return this.exclusive(async () => {
      const stored = await this.ctx.storage.get<Slots>(KEY);
      // Nothing stored and nothing overran: there is no slot to give back.
      if (!stored && !end.overran) return;
      const slots = await this.load(stored ? undefined : settings(this.env).fairShare);
      slots.admitted = slots.admitted.filter((slot) => slot.queryId !== queryId);
      slots.waiting = slots.waiting.filter((id) => id !== queryId);
      if (end.overran) slots.coolDown = nextCoolDown(slots, Date.now());
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

  /** Retries a failed send, takes back slots whose lease ran out, and admits the line when a cool-down ends. */
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
   * queue (a query sent twice is claimed once), then stores the slots; during
   * a cool-down none is given. While queries wait, the alarm is set for when
   * the oldest lease runs out or the cool-down ends, whichever comes first.
   */
  private async promote(slots: Slots): Promise<void> {
    const next: string[] = [];
    const cooling = coolingDown(slots);
    while (!cooling && slots.admitted.length < slots.share.maxRunning && slots.waiting.length > 0) {
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
    const wakeAt = Math.min(leaseEnds, cooling ? slots.coolDown!.until : Infinity);
    if (retryAt !== null) await this.ctx.storage.setAlarm(retryAt);
    else if (slots.waiting.length > 0 && Number.isFinite(wakeAt)) await this.ctx.storage.setAlarm(wakeAt);
    else await this.ctx.storage.deleteAlarm();
  }
}

function coolingDown(slots: Slots, now = Date.now()): boolean {
  return slots.coolDown != null && now < slots.coolDown.until;
}

/**
 * The cool-down after an overrun at `now`: the base length, doubled if the
 * previous cool-down is in force or ended less than a lease ago (a query
 * admitted when it ended may not have ended yet), up to MAX_COOL_DOWN_FACTOR
 * times the base. One rule, no counters: a user who keeps overrunning waits
 * longer each time, and one who went a lease without an overrun starts afresh.
 */
function nextCoolDown(slots: Slots, now: number): { until: number; ms: number } {
  const base = slots.share.overrunCoolDownMs;
  const previous = slots.coolDown;
  const recent = previous != null && now < previous.until + slots.share.leaseMs;
  const ms = recent ? Math.min(Math.max(previous.ms * 2, base), base * MAX_COOL_DOWN_FACTOR) : base;
  return { until: now + ms, ms };
}
