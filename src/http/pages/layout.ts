import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

type Content = HtmlEscapedString | Promise<HtmlEscapedString>;

/** The frame of every HTML page the service shows to a person. */
export function page(title: string, body: Content): Content {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title} · dqs</title>
        <style>
          body {
            font:
              16px/1.5 system-ui,
              sans-serif;
            max-width: 46rem;
            margin: 3rem auto;
            padding: 0 1rem;
            color: #1b1f24;
          }
          h1 {
            font-size: 1.5rem;
          }
          code,
          textarea {
            font:
              13px/1.4 ui-monospace,
              monospace;
          }
          textarea {
            width: 100%;
            box-sizing: border-box;
            padding: 0.5rem;
            resize: vertical;
          }
          label {
            display: block;
            margin: 1rem 0 0.25rem;
            font-weight: 600;
          }
          input[type="text"] {
            font-size: 1rem;
            padding: 0.4rem;
            width: 20rem;
            max-width: 100%;
          }
          button {
            font-size: 1rem;
            padding: 0.4rem 1.2rem;
            margin-top: 1rem;
            cursor: pointer;
          }
          .muted {
            color: #57606a;
            font-size: 0.9rem;
          }
        </style>
      </head>
      <body>
        ${body}
      </body>
    </html>`;
}
