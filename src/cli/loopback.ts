import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A login that ended at the loopback address without tokens (denied, failed, or a bad code). */
export class LoginFailedError extends Error {
  override name = "LoginFailedError";
}

export interface LoopbackServer {
  /** Where the service sends the browser back: `http://127.0.0.1:<port>/callback`. */
  redirectUri: string;
  /** Settles once: with the account logged in, or with the reason the login failed. */
  result: Promise<string>;
  close(): void;
}

/**
 * Listens on 127.0.0.1 at a port the system picks, for the one redirect that
 * ends a browser login (RFC 8252 §7.3). A request with another `state` is
 * refused and ignored (it did not come from this login); the first with the
 * right one settles the login: `exchange` turns its code into tokens, and the
 * browser is told how it went.
 */
export async function startLoopbackServer(options: {
  state: string;
  exchange: (code: string) => Promise<string>;
}): Promise<LoopbackServer> {
  let settle: { resolve: (account: string) => void; reject: (error: Error) => void } | undefined;
  const result = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let done = false;

  const server = createServer((request, response) => {
    void handle(request, response);
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (request.method !== "GET" || url.pathname !== "/callback") return page(response, 404, "Not found", "");
    if (done) return page(response, 410, "Already done", "This login has finished; you can close this window.");
    if (url.searchParams.get("state") !== options.state)
      return page(response, 400, "Unknown login", "This is not the login the dqs command line is waiting for.");
    done = true;
    const error = url.searchParams.get("error");
    const code = url.searchParams.get("code");
    if (error || !code) {
      const reason = error === "access_denied" ? "the identity provider refused it" : (error ?? "no code came back");
      page(response, 400, "Login failed", `The login did not finish: ${reason}. Run dqs login again.`);
      settle?.reject(new LoginFailedError(`The login did not finish: ${reason}.`));
      return;
    }
    try {
      const account = await options.exchange(code);
      page(
        response,
        200,
        "Logged in",
        `You are logged in to dqs as ${account}. Return to the terminal; you can close this window.`,
      );
      settle?.resolve(account);
    } catch (failure) {
      page(response, 400, "Login failed", `${(failure as Error).message} Run dqs login again.`);
      settle?.reject(failure as Error);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    result,
    close() {
      server.close();
      server.closeAllConnections();
    },
  };
}

function page(response: ServerResponse, status: number, title: string, text: string): void {
  const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  response.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    connection: "close",
  });
  response.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>dqs: ${escape(title)}</title></head>` +
      `<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">` +
      `<h1 id="title">${escape(title)}</h1><p id="message">${escape(text)}</p></body></html>`,
  );
}
