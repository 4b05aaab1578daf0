// Bundles the command line into one ESM file for Node ≥ 20 (`npm run build:cli`, run by `prepare` on
// `npm ci`/`npm install`): `node src/cli/build.mjs [outfile]`, default dist/cli/dqs.mjs (the package's "bin").
import { chmod } from "node:fs/promises";
import { fileURLToPath } from "node:url";

// esbuild is a dev dependency: an install without them (`npm ci --omit=dev`) skips the CLI instead of failing.
const esbuild = await import("esbuild").catch(() => null);
if (!esbuild) {
  console.warn("dqs: esbuild is not installed, so the dqs command line was not built (npm run build:cli).");
  process.exit(0);
}

const root = fileURLToPath(new URL("../..", import.meta.url));
const outfile = process.argv[2] ?? `${root}dist/cli/dqs.mjs`;

await esbuild.build({
  entryPoints: [`${root}src/cli/main.ts`],
  outfile,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  logLevel: "warning",
  legalComments: "none",
  // CommonJS dependencies call require(); an ES module has none unless it makes one.
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __dqsCreateRequire } from 'node:module';\nconst require = __dqsCreateRequire(import.meta.url);",
  },
});
await chmod(outfile, 0o755);
