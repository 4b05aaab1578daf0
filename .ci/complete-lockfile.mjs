// Adds lockfile entries for optional platform packages that the registry in
// use did not serve (other operating systems' binaries), so that `npm ci`
// accepts the lockfile everywhere. An entry carries the version and the
// platform only; on that platform npm fetches it by version.
import { readFileSync, writeFileSync } from "node:fs";

const check = process.argv.includes("--check");
const path = process.argv.find((arg, i) => i > 1 && !arg.startsWith("--")) ?? "package-lock.json";
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;
const PLATFORM = [
  [/darwin-arm64$/, ["darwin"], ["arm64"]],
  [/darwin-(64|x64)$/, ["darwin"], ["x64"]],
  [/linux-arm64(-gnu|-musl)?$/, ["linux"], ["arm64"]],
  [/linux-(64|x64)(-gnu|-musl)?$/, ["linux"], ["x64"]],
  [/(windows|win32)-(64|x64)$/, ["win32"], ["x64"]],
  [/(windows|win32)-arm64$/, ["win32"], ["arm64"]],
];
/** Where npm would find `name` from the package at `location`: nested first, then each enclosing node_modules. */
function resolves(location, name) {
  let base = location;
  for (;;) {
    if (`${base ? `${base}/` : ""}node_modules/${name}` in packages) return true;
    if (!base) return false;
    const cut = base.lastIndexOf("node_modules/");
    base = cut <= 0 ? "" : base.slice(0, cut - 1);
  }
}

let added = 0;
for (const [location, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    if (resolves(location, name)) continue;
    const platform = PLATFORM.find(([pattern]) => pattern.test(name));
    if (!platform) throw new Error(`no platform known for ${name}`);
    // Hoisted where nothing else holds the name, else next to the package that wants it.
    const hoisted = `node_modules/${name}`;
    const target = !(hoisted in packages) ? hoisted : `${location}/node_modules/${name}`;
    packages[target] = { version: version.replace(/^[\^~]/, ""), optional: true, os: platform[1], cpu: platform[2] };
    if (entry.dev) packages[target].dev = true;
    if (/-musl$/.test(name)) packages[target].libc = ["musl"];
    if (/-gnu$/.test(name)) packages[target].libc = ["glibc"];
    added++;
  }
}
if (check) {
  if (added > 0) {
    console.error(`${path} lacks ${added} platform entries; run: npm run lockfile:complete`);
    process.exit(1);
  }
} else {
  writeFileSync(path, JSON.stringify(lock, null, 2) + "\n");
  console.log(`added ${added} platform entries to ${path}`);
}
