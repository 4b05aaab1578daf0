/**
 * The Worker isolate's own memory, read through wrangler's DevTools
 * inspector proxy (Chrome DevTools Protocol, `Runtime.getHeapUsage`): the
 * V8 heap in use and the memory V8 accounts outside it (ArrayBuffer backing
 * stores and what workerd reports for its native objects). WebAssembly
 * memories are not in it: V8 does not account memories reserved with guard
 * regions (sql.js's heap, which only grows, is never part of a reading).
 * Unlike the workerd process RSS, this is the isolate alone, without the
 * local D1/R2/queue emulation or the other Worker.
 *
 * Which isolate: `wrangler dev -c wrangler.toml -c wrangler.engine.toml` runs
 * both Workers in one workerd process, one isolate each, but wrangler's
 * inspector proxy (`--inspector-port`) lists one target only, `/ws`, relayed
 * to the first config's Worker (`core:user:dqs`, the API Worker: uploads).
 * The engine Worker (`core:user:dqs-engine`: queries, column-image builds) is
 * reached on workerd's own inspector socket (`--inspector-addr=127.0.0.1:0`,
 * a port wrangler does not print; `server.ts` finds it), whose `/json` lists
 * every Worker of the process by id. workerd admits one session per isolate:
 * the API Worker's is wrangler's proxy's (a direct session to it never
 * answers, and the proxy stops answering too), so the API Worker is read
 * through the proxy and the engine directly. Each session is checked once by
 * the scripts its isolate has loaded (`checkMainScript`: the bundle of the
 * config's `main`, `index.js` or `engine.js`).
 *
 * Two measures:
 * - `measure`: readings as they come, so they include garbage V8 has not
 *   collected yet (mostly a matter of when its last GC ran);
 * - `measureHeld`: each reading after two forced full GCs, which is what the
 *   work actually holds (live memory); V8 collects garbage before it
 *   fails for lack of memory, so this is the figure to hold against the
 *   isolate's limit. (Checked against heap snapshots, whose own thorough GC
 *   left the same ArrayBuffer bytes.)
 *
 * Forcing a GC: `HeapProfiler.collectGarbage` is relayed by wrangler's
 * proxy but workerd never answers it, and nothing is collected (with or
 * without `HeapProfiler.enable`; workerd 1.20261117). V8's sampling heap
 * profiler, once started, runs a full GC (`CollectAllGarbage`) at every
 * `HeapProfiler.getSamplingProfile`; its sampling interval is set so large
 * that it records next to nothing. A full GC frees ArrayBuffers only when
 * their sweep is finalized, at the start of the next GC at the latest, so a
 * reading takes two GCs and the reading itself sent together: workerd
 * dispatches the inspector messages queued at once under one isolate lock,
 * so no JavaScript allocates between the GCs and the reading. (Sent one at a
 * time, a gzip upload — fflate allocates fresh buffers for each 8 KiB slice
 * it inflates — read ~18 MB above its live set on every sample.)
 */

export interface HeapUsage {
  /** V8 heap in use, bytes (live objects and garbage not yet collected). */
  used: number;
  /** V8 heap reserved, bytes. */
  total: number;
  /** ArrayBuffer backing stores (WebAssembly memories, byte arrays), bytes. */
  backing: number;
}

export interface HeapReport {
  baseline: HeapUsage;
  /** Highest used + backing seen while the work ran. */
  peak: HeapUsage;
  /** Peak (used + backing) minus baseline (used + backing), bytes. */
  delta: number;
  samples: number;
}

/** `measureHeld`'s report: every reading after forced full GCs. */
export interface HeldReport extends HeapReport {
  /** Readings answered after the work had ended, left out of the peak (the queue may have started a build by then). */
  late: number;
  /** Milliseconds between the first and the last reading that counted. */
  spanMs: number;
}

/** The sampling heap profiler's mean interval between samples, bytes: so large that it records next to nothing. */
const SAMPLING_INTERVAL_BYTES = 2 ** 30;

export class IsolateInspector {
  private readonly socket: WebSocket;
  private next = 1;
  private readonly pending = new Map<number, (result: unknown) => void>();
  /** Whether GCs can be forced for `heldUsage` (the sampling heap profiler started and answers). */
  canCollect = false;

  /** The DevTools WebSocket URL of the session (which target). */
  readonly url: string;

  private constructor(socket: WebSocket, url: string) {
    this.socket = socket;
    this.url = url;
    // A closed connection (the isolate restarted) answers nothing more: settle what waits.
    socket.addEventListener("close", () => {
      for (const settle of [...this.pending.values()]) settle(null);
    });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
      if (message.id !== undefined) this.pending.get(message.id)?.(message.result ?? null);
    });
  }

  /**
   * Connects to a target of the inspector on `port`: the one whose `id` is `targetId`, else the first listed
   * (wrangler's proxy lists one). Null when there is none or the connection fails.
   */
  static async connect(port: number, targetId?: string): Promise<IsolateInspector | null> {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
        id: string;
        webSocketDebuggerUrl: string;
      }[];
      const url = (targetId === undefined ? targets[0] : targets.find((t) => t.id === targetId))?.webSocketDebuggerUrl;
      if (!url) return null;
      // The proxy admits local origins only; Node's WebSocket sends none unless told (an undici extension).
      const socket = new WebSocket(url, { headers: { origin: "http://127.0.0.1" } } as unknown as string[]);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("inspector: no connection in 10 s")), 10_000);
        socket.addEventListener("open", () => (clearTimeout(timer), resolve()));
        socket.addEventListener(
          "error",
          () => (clearTimeout(timer), reject(new Error("inspector: connection failed"))),
        );
      });
      const inspector = new IsolateInspector(socket, url);
      if (!(await inspector.usage())) {
        inspector.close();
        return null;
      }
      const started = await inspector.call("HeapProfiler.startSampling", 10_000, {
        samplingInterval: SAMPLING_INTERVAL_BYTES,
      });
      inspector.canCollect =
        started !== null && (await inspector.call("HeapProfiler.getSamplingProfile", 30_000)) !== null;
      return inspector;
    } catch {
      return null;
    }
  }

  /**
   * The URLs of the scripts the isolate has loaded (`Debugger.enable` announces each with
   * `Debugger.scriptParsed` before it answers; `Debugger.disable` right after). Empty when it does not answer.
   */
  async scriptUrls(): Promise<string[]> {
    const urls: string[] = [];
    const listen = (event: MessageEvent) => {
      const message = JSON.parse(String(event.data)) as { method?: string; params?: { url?: string } };
      if (message.method === "Debugger.scriptParsed" && message.params?.url) urls.push(message.params.url);
    };
    this.socket.addEventListener("message", listen);
    try {
      const enabled = await this.call("Debugger.enable", 10_000);
      await this.call("Debugger.disable", 10_000);
      return enabled === null ? [] : urls;
    } finally {
      this.socket.removeEventListener("message", listen);
    }
  }

  /**
   * Whether this session's isolate runs the Worker whose bundle is `bundle` (e.g. `engine.js`: wrangler bundles
   * `main = "src/worker/engine.ts"` to `.wrangler/tmp/dev-…/engine.js`); `script` is the URL found, if any.
   */
  async checkMainScript(bundle: string): Promise<{ ok: boolean; script: string | null; isolateId: string | null }> {
    const urls = await this.scriptUrls();
    const script = urls.find((u) => u.startsWith("file:") && u.endsWith(`/${bundle}`) && u.includes("/.wrangler/tmp/"));
    const id = (await this.call("Runtime.getIsolateId", 5_000)) as { id?: string } | null;
    return { ok: script !== undefined, script: script ?? null, isolateId: id?.id ?? null };
  }

  private call(method: string, timeoutMs: number, params: object = {}): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(null);
      }, timeoutMs);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(result);
      });
      try {
        this.socket.send(JSON.stringify({ id, method, params }));
      } catch {
        resolve(null);
      }
    });
  }

  /** The isolate's heap now; null when it does not answer in time (busy, or restarting). */
  async usage(timeoutMs = 5_000): Promise<HeapUsage | null> {
    return toUsage(await this.call("Runtime.getHeapUsage", timeoutMs));
  }

  /**
   * The isolate's heap after two forced full GCs, the three messages sent at
   * once (see the top of this file); null when it does not answer in time or
   * GC cannot be forced.
   */
  async heldUsage(timeoutMs = 30_000): Promise<HeapUsage | null> {
    if (!this.canCollect) return null;
    const [first, second, usage] = await Promise.all([
      this.call("HeapProfiler.getSamplingProfile", timeoutMs),
      this.call("HeapProfiler.getSamplingProfile", timeoutMs),
      this.call("Runtime.getHeapUsage", timeoutMs),
    ]);
    return first !== null && second !== null ? toUsage(usage) : null;
  }

  /**
   * Samples the heap back to back (at most every `everyMs`) while `work` runs; readings answered after it
   * ended do not count (a reading waits while the isolate runs, and the queue may have started a build).
   */
  async measure<T>(work: () => Promise<T>, everyMs = 20): Promise<{ value: T; heap: HeapReport | null }> {
    const baseline = await this.usage();
    if (!baseline) return { value: await work(), heap: null };
    let peak = baseline;
    let samples = 1;
    const value = await sampleWhile(
      work,
      () => this.usage(30_000),
      everyMs,
      (now, late) => {
        if (late) return;
        samples++;
        if (now.used + now.backing > peak.used + peak.backing) peak = now;
      },
    );
    const delta = peak.used + peak.backing - (baseline.used + baseline.backing);
    return { value, heap: { baseline, peak, delta, samples } };
  }

  /**
   * What `work` holds: a baseline after forced GCs, then readings after
   * forced GCs back to back (at most every `everyMs`; each takes tens of
   * ms, and waits while the isolate runs a long synchronous stretch) while it
   * runs. Readings answered after `work` ended do not count. Null heap when
   * GC cannot be forced.
   */
  async measureHeld<T>(work: () => Promise<T>, everyMs = 50): Promise<{ value: T; heap: HeldReport | null }> {
    const baseline = await this.heldUsage();
    if (!baseline) return { value: await work(), heap: null };
    let peak = baseline;
    let samples = 0;
    let late = 0;
    let first = 0;
    let last = 0;
    const value = await sampleWhile(
      work,
      () => this.heldUsage(),
      everyMs,
      (now, afterWork) => {
        if (afterWork) return void late++;
        samples++;
        last = Date.now();
        first ||= last;
        if (now.used + now.backing > peak.used + peak.backing) peak = now;
      },
    );
    const delta = peak.used + peak.backing - (baseline.used + baseline.backing);
    return { value, heap: { baseline, peak, delta, samples, late, spanMs: last - first } };
  }

  close(): void {
    try {
      this.socket.close();
    } catch {
      // already closed
    }
  }
}

/**
 * Runs `work` while taking readings back to back (waiting `everyMs` between
 * them); each reading goes to `take`, with `afterWork` true when it was
 * answered only after `work` had ended. Resolves once both are done.
 */
async function sampleWhile<T>(
  work: () => Promise<T>,
  read: () => Promise<HeapUsage | null>,
  everyMs: number,
  take: (reading: HeapUsage, afterWork: boolean) => void,
): Promise<T> {
  let running = true;
  const sampler = (async () => {
    while (running) {
      const now = await read();
      if (now) take(now, !running);
      if (running) await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    return await work();
  } finally {
    running = false;
    await sampler;
  }
}

function toUsage(result: unknown): HeapUsage | null {
  const r = result as { usedSize?: number; totalSize?: number; backingStorageSize?: number } | null;
  if (!r || typeof r.usedSize !== "number") return null;
  return { used: r.usedSize, total: r.totalSize ?? 0, backing: r.backingStorageSize ?? 0 };
}

/** What the memory pass measures a run with: one isolate, or either of the engine's two lanes. */
export type Measurer = Pick<IsolateInspector, "measure" | "measureHeld">;

/**
 * The engine's quick and long lanes (src/worker/query/queues.ts) as one: a
 * query runs in the one or, moved, in the other, so both are read while it
 * runs and the one whose heap grew more is reported.
 */
export function eitherIsolate(a: IsolateInspector, b: IsolateInspector): Measurer {
  const larger = <R extends { delta: number }>(x: R | null, y: R | null) =>
    x === null ? y : y === null ? x : y.delta > x.delta ? y : x;
  return {
    async measure(work, everyMs) {
      const outer = await a.measure(() => b.measure(work, everyMs), everyMs);
      return { value: outer.value.value, heap: larger(outer.heap, outer.value.heap) };
    },
    async measureHeld(work, everyMs) {
      const outer = await a.measureHeld(() => b.measureHeld(work, everyMs), everyMs);
      return { value: outer.value.value, heap: larger(outer.heap, outer.value.heap) };
    },
  };
}
