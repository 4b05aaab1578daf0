/** The `dqs` command line as a person runs it: built from the sources, one Node process per command. */
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { buildCli, runCli, temporaryHome } from "../test/e2e/support/cli-run.ts";
import { loginTokens } from "./dqs.ts";

export class CliUploader {
  private readonly cli: string;
  private readonly home: string;

  private constructor(cli: string, home: string) {
    this.cli = cli;
    this.home = home;
  }

  /**
   * Builds the command line (as `npm run build:cli` does) and logs it in as
   * `username` in a HOME of its own, with the refresh token of a session of
   * its own pasted into `dqs login --no-browser`.
   */
  static async start(baseUrl: string, username: string): Promise<CliUploader> {
    const cli = buildCli();
    const home = temporaryHome();
    const uploader = new CliUploader(cli, home);
    try {
      const { RefreshToken } = await loginTokens(baseUrl, username);
      const login = await runCli(cli, ["login", "--no-browser", "--url", baseUrl], {
        home,
        stdin: `${RefreshToken}\n`,
      });
      if (login.code !== 0) throw new Error(`dqs login exited ${login.code}: ${login.stderr.trim().slice(-500)}`);
    } catch (error) {
      uploader.close();
      throw error;
    }
    return uploader;
  }

  /** `dqs upload FILE account/dataset/name`; `seconds` from the process's start to its exit. */
  async upload(
    account: string,
    dataset: string,
    dataName: string,
    path: string,
  ): Promise<{ ok: boolean; message: string; seconds: number }> {
    const started = performance.now();
    const result = await runCli(this.cli, ["--json", "upload", path, `${account}/${dataset}/${dataName}`], {
      home: this.home,
    });
    const seconds = (performance.now() - started) / 1000;
    if (result.code !== 0)
      return { ok: false, message: `exit ${result.code}: ${result.stderr.trim().slice(-500)}`, seconds };
    let message = result.stdout.trim();
    try {
      message = (JSON.parse(message) as { Message?: string }).Message ?? message;
    } catch {
      // not JSON: keep the text
    }
    return { ok: true, message, seconds };
  }

  /** Removes the HOME (its token file) and the built command line. */
  close(): void {
    rmSync(this.home, { recursive: true, force: true });
    rmSync(dirname(this.cli), { recursive: true, force: true });
  }
}
