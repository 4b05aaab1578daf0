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
let added = 0;
for (const [location, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    // npm looks for the dependency next to the package, then in each parent node_modules.
    const parts = location.split("node_modules/").slice(0, -1);
    let found = false;
    for (let depth = parts.length; depth >= 0 && !found; depth--) {
      const prefix = parts.slice(0, depth).join("node_modules/");
      found = `${prefix}node_modules/${name}` in packages;
    }
    if (found) continue;
    const platform = PLATFORM.find(([pattern]) => pattern.test(name));
    if (!platform) throw new Error(`no platform known for ${name}`);
    const target = location === "" ? `node_modules/${name}` : `${location}/node_modules/${name}`;
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
