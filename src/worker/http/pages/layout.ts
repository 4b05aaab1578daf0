import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

type Content = HtmlEscapedString | Promise<HtmlEscapedString>;

/**
 * The frame of every HTML page the service shows to a person (sign-in, terms,
 * tokens): the console's stylesheet, top bar and card, so a sign-in looks like
 * the console it leads to.
 */
export function page(title: string, body: Content): Content {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title} · dqs</title>
        <link rel="icon" href="/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/console/app.css" />
      </head>
      <body>
        <header class="top">
          <a class="brand" href="/console/">dqs</a>
        </header>
        <main class="page-card">${body}</main>
      </body>
    </html>`;
}
