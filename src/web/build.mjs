// Builds what the API Worker serves as static assets (wrangler.toml [assets]) into dist/web:
// the console's bundle, the landing page, the pages' stylesheet and Swagger UI's files for /v1/docs.
// `node src/web/build.mjs [--watch] [--sizes]`; run by `prepare`, `pretest`, `npm run dev` and `npm run deploy`.
import { cp, mkdir, readFile, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

// esbuild is a dev dependency: an install without them skips the console instead of failing.
const esbuild = await import("esbuild").catch(() => null);
if (!esbuild) {
  console.warn("dqs: esbuild is not installed, so the web console was not built (npm run build:web).");
  process.exit(0);
}

const root = fileURLToPath(new URL("../..", import.meta.url));
const out = join(root, "dist/web");
const watch = process.argv.includes("--watch");
const require = createRequire(import.meta.url);
const swaggerDir = dirname(require.resolve("swagger-ui-dist/package.json"));

/** The console's bundle options; `outdir` differs between a one-off build (beside dist/web, then swapped in) and watch. */
const bundle = (outdir) => ({
  entryPoints: { app: join(root, "src/web/console/main.tsx") },
  outdir,
  bundle: true,
  format: "esm",
  // The editor and the chart (most of the weight) are chunks of their own, loaded by the pages that use them.
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  platform: "browser",
  target: ["chrome120", "firefox120", "safari17"],
  minify: !watch,
  sourcemap: watch ? "inline" : false,
  legalComments: "none",
  jsx: "automatic",
  jsxImportSource: "preact",
  logLevel: "warning",
  metafile: true,
  define: { "process.env.NODE_ENV": watch ? '"development"' : '"production"' },
});

/** The files that are not bundled: pages, stylesheets, and Swagger UI's prebuilt bundle. */
async function copyStatic(target) {
  await cp(join(root, "src/web/static"), target, { recursive: true });
  await mkdir(join(target, "assets"), { recursive: true });
  for (const file of ["swagger-ui-bundle.js", "swagger-ui.css"])
    await cp(join(swaggerDir, file), join(target, "assets", file));
}

if (watch) {
  await rm(out, { recursive: true, force: true });
  await copyStatic(out);
  const context = await esbuild.context(bundle(join(out, "console")));
  await context.watch();
  console.log(`dqs: watching src/web, writing ${relative(root, out)} (wrangler dev serves each change on reload)`);
} else {
  // Built beside the old tree and swapped in, so a running `wrangler dev` never serves half a build.
  const next = `${out}.next-${process.pid}`;
  await rm(next, { recursive: true, force: true });
  await copyStatic(next);
  const result = await esbuild.build(bundle(join(next, "console")));
  const old = `${out}.old-${process.pid}`;
  await rename(out, old).catch(() => {});
  await rename(next, out);
  await rm(old, { recursive: true, force: true });
  if (process.argv.includes("--sizes"))
    for (const file of Object.keys(result.metafile.outputs).map((output) => relative(next, join(root, output)))) {
      const bytes = await readFile(join(out, file));
      const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
      console.log(`dist/web/${file}: ${kib(bytes.length)}, gzip ${kib(gzipSync(bytes).length)}`);
    }
}
