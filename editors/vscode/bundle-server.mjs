// Copies maxkernel-lsp (stripped of debug info) and the Python worker it ships to hosts into the
// extension, so the .vsix runs without a checkout: bin/maxkernel-lsp finds tpu/worker by walking
// up from its own folder.  node bundle-server.mjs [SERVER]   (default $MAXKERNEL_LSP, ../../build/bin)
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const server = path.resolve(process.argv[2] ?? process.env.MAXKERNEL_LSP ?? path.join(root, "build", "bin", "maxkernel-lsp"));
if (!fs.existsSync(server)) {
  console.error(`bundle-server: no server at ${server}; build it (scripts/build.sh) or pass its path`);
  process.exit(1);
}
const bin = path.join(here, "bin");
fs.rmSync(bin, { recursive: true, force: true });
fs.mkdirSync(bin, { recursive: true });
const target = path.join(bin, "maxkernel-lsp");
const strip = spawnSync("strip", ["--strip-debug", "-o", target, server], { encoding: "utf8" });
if (strip.status !== 0) fs.copyFileSync(server, target); // no binutils: ship it as built
fs.chmodSync(target, 0o755);

const workerFrom = path.join(root, "tpu", "worker");
const workerTo = path.join(here, "tpu", "worker");
fs.rmSync(path.join(here, "tpu"), { recursive: true, force: true });
fs.mkdirSync(workerTo, { recursive: true });
for (const f of fs.readdirSync(workerFrom).filter((f) => f.endsWith(".py"))) {
  fs.copyFileSync(path.join(workerFrom, f), path.join(workerTo, f));
}
console.log(`bundle-server: ${server} -> bin/maxkernel-lsp (${(fs.statSync(target).size / 1e6).toFixed(1)} MB), tpu/worker`);
