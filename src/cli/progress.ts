import { SingleBar } from "cli-progress";
import { bytes } from "./output";

/**
 * A byte progress bar on stderr: drawn at a terminal, as a line now and then
 * with `always` (logs, CI), and not at all when not `wanted`.
 */
export class ByteProgress {
  private readonly bar: SingleBar | null;
  private started = false;
  private startedAt = 0;

  constructor(label: string, always = false, wanted = true) {
    const show = wanted && (process.stderr.isTTY || always);
    this.bar = show
      ? new SingleBar({
          stream: process.stderr,
          format: `${label} [{bar}] {percentage}% | {done} of {size} | {speed}`,
          barCompleteChar: "=",
          barIncompleteChar: " ",
          hideCursor: true,
          noTTYOutput: always,
          notTTYSchedule: 1000,
        })
      : null;
  }

  /** Bytes done so far, of `total` when known. */
  update(done: number, total: number | null): void {
    if (!this.bar) return;
    const size = total ?? Math.max(done, 1);
    const payload = { done: bytes(done), size: total === null ? "?" : bytes(total), speed: "" };
    if (!this.started) {
      this.started = true;
      this.startedAt = Date.now();
      this.bar.start(size, done, payload);
      return;
    }
    const seconds = (Date.now() - this.startedAt) / 1000;
    payload.speed = seconds > 0 ? `${bytes(Math.round(done / seconds))}/s` : "";
    this.bar.setTotal(size);
    this.bar.update(done, payload);
  }

  stop(): void {
    if (this.started) this.bar?.stop();
  }
}
