/** The longest Callback.Url accepted. */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/**
 * Top-level names that never lead to a public host: special-use names
 * (RFC 6761, 6762, 7686, 8375 and .arpa's reverse zones), ICANN's
 * `.internal`, names ICANN will not delegate (home, corp, mail) and the
 * usual private ones.
 */
const PRIVATE_TOP_LEVEL = new Set([
  "localhost",
  "local",
  "alt",
  "localdomain",
  "internal",
  "intranet",
  "private",
  "lan",
  "home",
  "corp",
  "mail",
  "test",
  "example",
  "invalid",
  "onion",
  "arpa",
]);

export type CallbackCheck = { ok: true; url: string } | { ok: false; message: string };

/**
 * The SSRF guard for completion webhooks. Outside development mode the URL
 * must be https on the default port, without a user name or password, to a
 * public host name: never an IP address (any notation), a loopback or
 * private name, or a single-label name. Development mode also accepts http
 * or https to a loopback host (localhost, *.localhost, 127.0.0.0/8, [::1]) on
 * any port, so tests can receive calls. Parsing is the WHATWG URL parser's,
 * the one fetch uses, so every spelling of an address (0x7f.1, 2130706433,
 * [::ffff:127.0.0.1], full-width digits, a trailing dot) is checked in the
 * form it is sent to. The name is not resolved here: see docs/api.md.
 */
export function checkCallbackUrl(raw: string, development: boolean): CallbackCheck {
  if (raw.length > MAX_CALLBACK_URL_LENGTH)
    return refuse(`is ${raw.length} characters long; the limit is ${MAX_CALLBACK_URL_LENGTH}`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("is not an absolute URL; send one like https://hooks.example.com/dqs");
  }
  // The name as the parser canonicalised it (IPv4 in dotted decimal, IPv6 in brackets), without a trailing dot.
  const host = url.hostname.replace(/\.$/, "").toLowerCase();
  const web = url.protocol === "https:" || url.protocol === "http:";
  // "localhost.." would leave "localhost." here, matching no rule below; a name with an empty label is no host name.
  if (host.split(".").includes("") && url.hostname !== "")
    return refuse(`names ${url.hostname}, which has an empty label (two dots in a row, or a leading dot)`);
  if (url.username !== "" || url.password !== "")
    return refuse("carries a user name or password; a receiver checks the webhook's signature instead");
  if (development && web && isLoopback(host)) return { ok: true, url: url.href };
  if (url.protocol !== "https:") return refuse(`must use https, not ${url.protocol.replace(/:$/, "")}`);
  if (isLoopback(host)) return refuse(`names ${url.hostname}, a loopback host; only development mode accepts those`);
  if (isIpAddress(host))
    return refuse(`names the IP address ${url.hostname}; IP addresses are not accepted, use a public host name`);
  if (url.port !== "") return refuse(`names port ${url.port}; only the default https port (443) is accepted`);
  if (!host.includes(".")) return refuse(`names ${url.hostname}, a single-label host name, which is not public`);
  const topLevel = host.slice(host.lastIndexOf(".") + 1);
  if (PRIVATE_TOP_LEVEL.has(topLevel))
    return refuse(`names ${url.hostname}, under .${topLevel}, which is not a public name`);
  return { ok: true, url: url.href };
}

function refuse(reason: string): CallbackCheck {
  return {
    ok: false,
    message: `Callback.Url ${reason}. A completion webhook goes to an https URL of a public host name (not an IP address, loopback or private name, on port 443, without user name or password).`,
  };
}

/** The parser writes every IPv4 notation in dotted decimal and every IPv6 address in brackets. */
function isIpAddress(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith("[");
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(host) || host === "[::1]";
}
