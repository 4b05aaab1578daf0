import { Hono } from "hono";
import swaggerUiCss from "swagger-ui-dist/swagger-ui.css" with { type: "text" };
import swaggerUiJs from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "text" };
import type { AppEnv } from "../context";
import copyButtonsJs from "../pages/copy-buttons.js" with { type: "text" };
import pageCss from "../pages/page.css" with { type: "text" };

/** Starts Swagger UI on the docs page; a file of its own because the page's policy allows no inline script. */
const DOCS_SCRIPT = `window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null });\n`;

const CSS = "text/css; charset=utf-8";
const JAVASCRIPT = "text/javascript; charset=utf-8";

/** Every file the HTML pages load, bundled into the Worker: pages need nothing from another origin. */
const ASSETS: Record<string, { body: string; type: string }> = {
  "page.css": { body: pageCss, type: CSS },
  "copy-buttons.js": { body: copyButtonsJs, type: JAVASCRIPT },
  "swagger-ui.css": { body: swaggerUiCss, type: CSS },
  "swagger-ui-bundle.js": { body: swaggerUiJs, type: JAVASCRIPT },
  "docs.js": { body: DOCS_SCRIPT, type: JAVASCRIPT },
};

export const assetRoutes = new Hono<AppEnv>();

for (const [name, asset] of Object.entries(ASSETS))
  assetRoutes.get(`/assets/${name}`, (c) =>
    c.body(asset.body, 200, { "Content-Type": asset.type, "Cache-Control": "public, max-age=86400" }),
  );
