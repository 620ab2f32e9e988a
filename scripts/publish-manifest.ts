/**
 * The package.json a user installs: this project's, without what only its development needs
 * (OMIT: scripts, devDependencies, allowScripts). npm runs this around every `npm pack` and
 * `npm publish` (package.json "prepack" / "postpack"), so `npm pack` stays the one command:
 *
 *   node scripts/publish-manifest.ts prepack   # writes the published package.json in place
 *   node scripts/publish-manifest.ts postpack  # puts the development one back
 *
 * Why: a tarball's "prepare" counts as an install script for npm, and every `npm install
 * ./lastgood-<v>.tgz` warned "npm warn install-scripts … (prepare: node scripts/build-cli.ts)"
 * about a script for files the package does not ship (test/package.test.ts: no warning).
 *
 * npm reads package.json again after "prepack" to pack it: the tarball gets the published one, and
 * npm finds no "prepare" to run, so "prepack" builds dist/cli/ first (--if-stale) as "prepare" did.
 *
 * The development package.json is swapped out for the second or so npm takes to write the tarball;
 * its modification time is kept (dist/cli/ is built from it: a newer one would make the bundle
 * stale). It is kept aside (node_modules/.cache/lastgood-pack/) and put back by "postpack", or, if
 * npm ends without running "postpack" (a failed pack, Ctrl-C), by a watcher that waits for the npm
 * process to end. Put back only if package.json is still the published one: an edit made meanwhile
 * is not overwritten (the development one stays aside, and that is said).
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE_JSON = path.join(ROOT, 'package.json');
const ASIDE = path.join(ROOT, 'node_modules', '.cache', 'lastgood-pack', 'package.json.aside');

/** What only the project's development needs: not in the package a user installs. */
export const OMIT = ['scripts', 'devDependencies', 'allowScripts'] as const;

/** The published package.json's text for the development one's: the same fields, in the same order, but OMIT. */
export function publishedManifest(text: string): string {
  const pkg = JSON.parse(text) as Record<string, unknown>;
  for (const key of OMIT) delete pkg[key];
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

interface Aside {
  /** the development package.json, byte for byte */
  development: string;
  /** what was written in its place */
  published: string;
  mtimeMs: number;
  atimeMs: number;
}

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.lastgood-pack-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

function prepack(): void {
  // an earlier pack that ended with neither "postpack" nor its watcher: its package.json first
  if (existsSync(ASIDE)) restore();
  if (existsSync(ASIDE)) throw new Error(`package.json was edited during an earlier npm pack; the development package.json is at ${ASIDE}: put it back, then pack again`);
  const development = readFileSync(PACKAGE_JSON, 'utf8');
  const { mtimeMs, atimeMs } = statSync(PACKAGE_JSON);
  const published = publishedManifest(development);
  mkdirSync(path.dirname(ASIDE), { recursive: true });
  writeAtomically(ASIDE, JSON.stringify({ development, published, mtimeMs, atimeMs } satisfies Aside));
  writeAtomically(PACKAGE_JSON, published);
  utimesSync(PACKAGE_JSON, atimeMs / 1000, mtimeMs / 1000);
  watchNpm();
}

/** Puts the development package.json back, unless package.json was edited meanwhile. */
function restore(): void {
  let aside: Aside;
  try {
    aside = JSON.parse(readFileSync(ASIDE, 'utf8')) as Aside;
  } catch {
    return; // put back already
  }
  const now = readFileSync(PACKAGE_JSON, 'utf8');
  if (now === aside.published) {
    writeAtomically(PACKAGE_JSON, aside.development);
    utimesSync(PACKAGE_JSON, aside.atimeMs / 1000, aside.mtimeMs / 1000);
  } else if (now !== aside.development) {
    process.stderr.write(`lastgood pack: package.json was edited while npm packed; it is left as it is, and the development package.json it replaced is at ${ASIDE}\n`);
    return;
  }
  rmSync(ASIDE, { force: true });
}

/** The npm process running this script: the first ancestor that is not a shell (npm runs scripts with `sh -c`). */
function npmPid(): number | undefined {
  let pid = process.ppid;
  for (let i = 0; i < 4; i++) {
    let line: string;
    try {
      line = execFileSync('ps', ['-o', 'ppid=,comm=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return undefined;
    }
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) return undefined;
    if (!/^(-?(sh|bash|dash|zsh|ash|ksh))$/.test(path.basename(m[2]!))) return pid;
    pid = Number(m[1]);
  }
  return undefined;
}

/** A detached process that puts package.json back when npm ends, should npm end without running "postpack". */
function watchNpm(): void {
  const pid = npmPid();
  if (!pid) return;
  spawn(process.execPath, [fileURLToPath(import.meta.url), 'watch', String(pid)], { detached: true, stdio: 'ignore' }).unref();
}

async function watch(pid: number): Promise<void> {
  const until = Date.now() + 3_600_000;
  while (existsSync(ASIDE) && Date.now() < until) {
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') {
        restore();
        return;
      }
    }
    await sleep(100);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [command, arg] = process.argv.slice(2);
  if (command === 'prepack') prepack();
  else if (command === 'postpack') restore();
  else if (command === 'watch') await watch(Number(arg));
  else {
    process.stderr.write('usage: node scripts/publish-manifest.ts prepack|postpack\n');
    process.exit(2);
  }
}
