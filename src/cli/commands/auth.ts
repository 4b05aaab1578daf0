import password from "@inquirer/password";
import type { Command } from "commander";
import open from "open";
import { createInterface } from "node:readline";
import { createPkce, DqsClient, NotLoggedInError, randomBase64url } from "../../sdk";
import { Context, UsageError } from "../context";
import { details } from "../output";
import { LoginFailedError, startLoopbackServer } from "../loopback";
import { fileTime } from "../token-file";

/** `dqs login`, `dqs logout`, `dqs whoami`. */
export function authCommands(program: Command): void {
  program
    .command("login")
    .description("log in with your browser; the tokens come back to this command through 127.0.0.1 (RFC 8252)")
    .option("--no-browser", "print the login URL instead of opening a browser, and accept a pasted refresh token")
    .option("--timeout <seconds>", "give up after this many seconds", "300")
    .action((options: { browser: boolean; timeout: string }, command: Command) => login(Context.of(command), options));

  program
    .command("logout")
    .description("revoke the session on the service and remove the profile's tokens")
    .action((_: unknown, command: Command) => logout(Context.of(command)));

  program
    .command("whoami")
    .description("show the account, service and token expiry of the profile (and check the tokens still work)")
    .action((_: unknown, command: Command) => whoami(Context.of(command)));
}

async function login(ctx: Context, options: { browser: boolean; timeout: string }): Promise<void> {
  const timeoutSeconds = Number(options.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)
    throw new UsageError("--timeout must be a number of seconds.");
  const baseUrl = await ctx.baseUrl();
  const client = new DqsClient({ baseUrl, tokens: ctx.store });
  const pkce = await createPkce();
  const state = randomBase64url(16);
  let redirectUri = "";
  const server = await startLoopbackServer({
    state,
    exchange: async (code) =>
      (await client.exchangeLoginCode({ code, codeVerifier: pkce.verifier, redirectUri })).accountName,
  });
  redirectUri = server.redirectUri;
  const url = client.loginUrl({ redirectUri, codeChallenge: pkce.challenge, state });

  const stopReading = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  try {
    const outcomes: Promise<{ account: string }>[] = [server.result.then((account) => ({ account }))];
    if (options.browser) {
      await ctx.note(`Opening your browser to log in. If it does not open, visit:\n\n  ${url}\n`);
      await open(url).catch(() => undefined);
    } else {
      await ctx.note(
        `Open this URL in a browser on this machine to log in:\n\n  ${url}\n\n` +
          `Or log in at ${client.baseUrl}/auth on any machine and paste the refresh token shown there.`,
      );
      outcomes.push(
        pastedRefreshToken(stopReading.signal).then(async (token) => {
          await client.loginWithRefreshToken(token);
          // A refresh token does not say whose it is; the service does.
          return { account: (await client.me()).AccountName };
        }),
      );
    }
    outcomes.push(
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new LoginFailedError(`No login within ${timeoutSeconds} s; run dqs login again.`)),
          timeoutSeconds * 1000,
        );
      }),
    );
    const { account } = await Promise.race(outcomes);
    // Take the paste prompt off the screen before saying how the login went.
    stopReading.abort();
    await new Promise((resolve) => setImmediate(resolve));
    await ctx.store.describe({ baseUrl, accountName: account });
    const tokens = await ctx.store.load();
    await ctx.print(
      {
        AccountName: account,
        Profile: ctx.profile,
        BaseUrl: client.baseUrl,
        TokenFile: ctx.store.path,
        AccessTokenExpiresOn: tokens && fileTime(tokens.accessTokenExpiresAt),
        RefreshTokenExpiresOn: tokens && fileTime(tokens.refreshTokenExpiresAt),
      },
      () =>
        `Logged in to ${client.baseUrl} as ${account} (profile ${ctx.profile}); tokens saved in ${ctx.store.path}.\n`,
    );
  } finally {
    clearTimeout(timer);
    stopReading.abort();
    server.close();
  }
}

/**
 * A refresh token typed or piped in, for a browser on another machine: a
 * masked prompt at a terminal, else the first line of standard input. Never
 * settles when input ends empty (the browser may still finish the login).
 */
function pastedRefreshToken(signal: AbortSignal): Promise<string> {
  const never = new Promise<string>(() => undefined);
  if (process.stdin.isTTY) {
    return password(
      { message: "Refresh token:", mask: "*" },
      { signal, output: process.stderr, clearPromptOnDone: true },
    )
      .then((token) => token.trim() || never)
      .catch(() => never);
  }
  return new Promise((resolve) => {
    const lines = createInterface({ input: process.stdin });
    const stop = () => {
      lines.close();
      process.stdin.destroy();
    };
    signal.addEventListener("abort", stop, { once: true });
    lines.on("line", (line) => {
      if (line.trim() === "") return;
      stop();
      resolve(line.trim());
    });
  });
}

async function logout(ctx: Context): Promise<void> {
  if (!(await ctx.store.load())) {
    await ctx.print({ Profile: ctx.profile, LoggedOut: false }, () => `Not logged in (profile ${ctx.profile}).\n`);
    return;
  }
  const client = await ctx.client();
  await client.logout();
  await ctx.print(
    { Profile: ctx.profile, LoggedOut: true },
    () => `Logged out (profile ${ctx.profile}): the session is revoked and its tokens are removed.\n`,
  );
}

async function whoami(ctx: Context): Promise<void> {
  if (!(await ctx.store.load())) throw new NotLoggedInError(`Not logged in (profile ${ctx.profile}): run dqs login.`);
  const client = await ctx.client();
  // The service says whom the tokens act for (which also proves they work, renewing them if the access token is due).
  const me = await client.me();
  const tokens = await ctx.store.load();
  const result = {
    AccountName: me.AccountName,
    UserId: me.UserId,
    TermsVersion: me.TermsVersion,
    Profile: ctx.profile,
    BaseUrl: client.baseUrl,
    TokenFile: ctx.store.path,
    AccessTokenExpiresOn: tokens && fileTime(tokens.accessTokenExpiresAt),
    RefreshTokenExpiresOn: tokens && fileTime(tokens.refreshTokenExpiresAt),
  };
  await ctx.print(result, () =>
    details([
      ["Account", result.AccountName],
      ["User", result.UserId],
      ["Terms accepted", `version ${result.TermsVersion}`],
      ["Profile", result.Profile],
      ["Service", result.BaseUrl],
      ["Access token expires", `${result.AccessTokenExpiresOn} UTC`],
      ["Refresh token expires", `${result.RefreshTokenExpiresOn} UTC`],
      ["Token file", result.TokenFile],
    ]),
  );
}
