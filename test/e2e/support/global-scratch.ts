import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The e2e run's scratch directory (scratchDir in cli-run.ts makes its
 * directories inside): made before the test files start, removed with
 * everything in it when they have ended, however they ended.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), "dqs-e2e-scratch-"));
  process.env.DQS_TEST_SCRATCH = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
