/**
 * The Worker isolate's own memory, read through wrangler's DevTools
 * inspector proxy (Chrome DevTools Protocol, `Runtime.getHeapUsage`): the
 * V8 heap in use and the ArrayBuffer backing stores (where WebAssembly
 * memory and byte buffers live). Unlike the workerd process RSS, this is
 * the isolate alone, without the local D1/R2/queue emulation.
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

export class IsolateInspector {
  private readonly socket: WebSocket;
  private next = 1;
  private readonly pending = new Map<number, (result: unknown) => void>();

  private constructor(socket: WebSocket) {
    this.socket = socket;
    // A closed connection (the isolate restarted) answers nothing more: settle what waits.
    socket.addEventListener("close", () => {
      for (const settle of [...this.pending.values()]) settle(null);
    });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
      if (message.id !== undefined) this.pending.get(message.id)?.(message.result ?? null);
    });
  }

  /** Connects to the first Worker the inspector proxy on `port` lists; null when that fails. */
  static async connect(port: number): Promise<IsolateInspector | null> {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
        webSocketDebuggerUrl: string;
      }[];
      const url = targets[0]?.webSocketDebuggerUrl;
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
      const inspector = new IsolateInspector(socket);
      return (await inspector.usage()) ? inspector : null;
    } catch {
      return null;
    }
  }

  private call(method: string, timeoutMs: number): Promise<unknown> {
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
        this.socket.send(JSON.stringify({ id, method, params: {} }));
      } catch {
        resolve(null);
      }
    });
  }

  /** The isolate's heap now; null when it does not answer in time (busy, or restarting). */
  async usage(timeoutMs = 5_000): Promise<HeapUsage | null> {
    const result = (await this.call("Runtime.getHeapUsage", timeoutMs)) as {
      usedSize?: number;
      totalSize?: number;
      backingStorageSize?: number;
    } | null;
    if (!result || typeof result.usedSize !== "number") return null;
    return { used: result.usedSize, total: result.totalSize ?? 0, backing: result.backingStorageSize ?? 0 };
  }

  /** Samples the heap back to back (at most every `everyMs`) while `work` runs. */
  async measure<T>(work: () => Promise<T>, everyMs = 20): Promise<{ value: T; heap: HeapReport | null }> {
    const baseline = await this.usage();
    if (!baseline) return { value: await work(), heap: null };
    let peak = baseline;
    let samples = 1;
    let running = true;
    const sampler = (async () => {
      while (running) {
        const now = await this.usage(30_000);
        if (now) {
          samples++;
          if (now.used + now.backing > peak.used + peak.backing) peak = now;
        }
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })();
    let value: T;
    try {
      value = await work();
    } finally {
      running = false;
      await sampler;
    }
    const after = await this.usage();
    if (after && after.used + after.backing > peak.used + peak.backing) peak = after;
    const delta = peak.used + peak.backing - (baseline.used + baseline.backing);
    return { value, heap: { baseline, peak, delta, samples } };
  }

  close(): void {
    try {
      this.socket.close();
    } catch {
      // already closed
    }
  }
}
