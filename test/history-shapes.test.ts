import test from 'ava';
import { asText, backends, everyBackend, evidenceOf, gitRevertOracle, History, locateAndPlan } from './support/history.ts';
import { kustomization } from './support/objects.ts';

/**
 * Issue 11, class 1: histories that are not a straight line. Each shape is built with native git;
 * locate and plan run through every backend and must agree; the bytes planned are compared with
 * native `git revert` of what locate named.
 */

const APP = 'apps/podinfo/';
const deploy = (tag: string, extra = '') => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/stefanprodan/podinfo:${tag}
${extra}`;

const failedFlux = (attempted: string, applied: string) => evidenceOf([kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${applied}`, ready: 'False' })]);

/** Runs locate+plan on every backend, checks they agree, and (when a revert was planned) that git revert writes the same bytes. */

test('linear: only the commit between applied and attempted that touched the paths is bad; LKG is the applied revision', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0'), 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial');
  const applied = h.commit({ [`${APP}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas');
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'podinfo 6.1.0');
  const attempted = h.commit({ 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  const o = await everyBackend(t, h, [APP], failedFlux(attempted, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'));
  t.is(o.after!.get(`${APP}replicas.yaml`)!.toString(), 'replicas: 2\n');
  t.regex(o.located!.explanation, new RegExp(`attempted ${attempted.slice(0, 12)} after applying ${applied.slice(0, 12)}`));
});

test('GitHub flow: a merged pull request is named by its merge commit, and its inner commits are reverted as one net change', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0'), [`${APP}config.yaml`]: 'level: info\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  h.branch('release-6.1', applied);
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'bump podinfo');
  h.commit({ [`${APP}config.yaml`]: 'level: debug\n' }, 'debug logs for the release');
  h.branch('main');
  const merge = h.merge('release-6.1', 'Merge pull request #12 from acme/release-6.1');
  const o = await everyBackend(t, h, [APP], failedFlux(merge, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [merge]);
  t.is(o.located!.lastKnownGood, applied);
  t.deepEqual(Object.keys(asText(o.after)), [`${APP}config.yaml`, `${APP}deploy.yaml`]);
  t.is(o.after!.get(`${APP}config.yaml`)!.toString(), 'level: info\n');
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'));
});

test('git pull merge: the applied revision is reachable only through the second parent; the applied commits are kept, the walk never passes them', async (t) => {
  const h = new History();
  const root = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0'), [`${APP}config.yaml`]: 'level: info\n' }, 'create podinfo');
  // someone pushed a good change that the cluster applied
  const applied = h.commit({ [`${APP}config.yaml`]: 'level: warn\n' }, 'podinfo: quieter logs');
  // someone else worked from the older main, then ran `git pull` (a merge whose first parent is their own work)
  h.branch('local', root);
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'podinfo 6.1.0');
  const pulled = h.merge('main', "Merge branch 'main' of github.com:acme/gitops");
  h.branch('main');
  h.git('merge', '-q', '--ff-only', 'local');
  const o = await everyBackend(t, h, [APP], failedFlux(pulled, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad], 'the local commit, not the merge, not the applied one, not the root');
  t.is(o.located!.lastKnownGood, applied);
  t.not(o.located!.lastKnownGood, root);
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'));
  t.is(o.after!.get(`${APP}config.yaml`)!.toString(), 'level: warn\n', 'the applied change survives');
  t.is(o.after!.size, 2, 'the target is not deleted');
});

test('git pull merge where both sides changed the same file: the conflict resolution stays, only the local change is undone', async (t) => {
  const h = new History();
  const root = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0', '      replicas: 1\n') }, 'create podinfo');
  const applied = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0', '      replicas: 3\n') }, 'podinfo: three replicas');
  h.branch('local', root);
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0', '      replicas: 1\n') }, 'podinfo 6.1.0');
  const pulled = h.mergeResolving('main', { [`${APP}deploy.yaml`]: deploy('6.1.0', '      replicas: 3\n') });
  h.branch('main');
  h.git('merge', '-q', '--ff-only', 'local');
  const o = await everyBackend(t, h, [APP], failedFlux(pulled, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0', '      replicas: 3\n'));
});

test('main merged into a release branch: the merge is the bad unit, the release branch head is the last-known-good', async (t) => {
  const h = new History();
  const root = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0'), 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial');
  h.branch('release', root);
  const applied = h.commit({ 'apps/redis/values.yaml': 'replicas: 2\n' }, 'release: redis two replicas');
  h.branch('main');
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'podinfo 6.1.0');
  h.commit({ 'docs/x.md': 'x\n' }, 'docs');
  h.branch('release');
  const merge = h.merge('main', "Merge branch 'main' into release");
  h.git('branch', '-f', 'main', 'release');
  const o = await everyBackend(t, h, [APP], failedFlux(merge, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [merge]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'));
});

test('squash merge: the squashed commit is bad', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0') }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const squash = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0'), [`${APP}hpa.yaml`]: 'kind: HorizontalPodAutoscaler\n' }, 'podinfo 6.1.0 (#13)');
  const o = await everyBackend(t, h, [APP], failedFlux(squash, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [squash]);
  t.deepEqual(Object.keys(asText(o.after)), [`${APP}deploy.yaml`], 'the added file is removed');
});

test('a person\'s revert inside the range cancels out: only the change that remains is bad, and the revert is clean', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0', '      replicas: 1\n') }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const tried = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0', '      replicas: 5\n') }, 'podinfo: five replicas');
  h.revert(tried);
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0', '      replicas: 1\n') }, 'podinfo 6.1.0');
  const o = await everyBackend(t, h, [APP], failedFlux(bad, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.revert.kind, 'range');
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0', '      replicas: 1\n'));
});

test('several bad commits in the range are reverted as their net change, even where one-by-one reverts would conflict', async (t) => {
  const h = new History();
  const file = (lines: string[]) => `${lines.join('\n')}\n`;
  h.commit({ [`${APP}values.yaml`]: file(['a: 1', 'b: 2', 'c: 3', 'x: 0', 'image: 6.0.0']) }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const first = h.commit({ [`${APP}values.yaml`]: file(['a: 1', 'b: 2', 'debug: true', 'c: 3', 'x: 0', 'image: 6.0.0']) }, 'debug on');
  const second = h.commit({ [`${APP}values.yaml`]: file(['a: 1', 'b: 2', 'c: 3', 'x: 0', 'image: 6.1.0']) }, 'debug off, podinfo 6.1.0');
  // a later good change where the first commit's line was: undoing the two one by one re-adds that line next to it
  h.commit({ [`${APP}values.yaml`]: file(['a: 1', 'b: 2', 'c: 4', 'x: 0', 'image: 6.1.0']) }, 'c: 4');
  const o = await everyBackend(t, h, [APP], failedFlux(second, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [second, first]);
  t.is(o.located!.revert.kind, 'range');
  t.is(o.after!.get(`${APP}values.yaml`)!.toString(), file(['a: 1', 'b: 2', 'c: 4', 'x: 0', 'image: 6.0.0']));
  // one by one, git itself conflicts
  const oneByOne = gitRevertOracle(h.dir, { ...o.located!, revert: { kind: 'commits', steps: [{ base: second, theirs: first }, { base: first, theirs: applied }] } }, [APP]);
  t.true(oneByOne.conflict);
});

test('a range that cannot be bounded (the applied revision is not an ancestor: a force-push) is refused with the reason', async (t) => {
  const h = new History();
  const root = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0') }, 'initial');
  h.branch('gone', root);
  const orphaned = h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.1') }, 'force-pushed away');
  h.branch('main');
  const attempted = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'podinfo 6.1.0');
  const o = await everyBackend(t, h, [APP], failedFlux(attempted, orphaned));
  t.regex(o.refused!, /cannot be bounded: .* applied [0-9a-f]{12}, which is not an ancestor of the attempted/);
});

test('applied = attempted with no failing image or chart named: refused, saying the engine reports the failing revision as applied', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0') }, 'initial');
  const c = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'podinfo 6.1.0');
  const o = await everyBackend(t, h, [APP], failedFlux(c, c));
  t.regex(o.refused!, /reports the failing revision [0-9a-f]{12} as applied/);
});

test('no applied revision reported (an event): the failing revision is named only when it changed the target paths itself', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0') }, 'initial');
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0') }, 'podinfo 6.1.0');
  const own = await everyBackend(t, h, [APP], evidenceOf([kustomization({ attempted: `main@sha1:${bad}`, ready: 'False' })]));
  t.deepEqual(own.located!.bad.map((c) => c.oid), [bad]);
  t.regex(own.located!.explanation, /the failing revision [0-9a-f]{12} itself changed the target paths \(earlier commits are not blamed/);
  // a failing revision that did not touch the paths: the newest commit below it is never taken by default
  const unrelated = h.commit({ 'README.md': 'x\n' }, 'docs');
  const o = await everyBackend(t, h, [APP], evidenceOf([kustomization({ attempted: `main@sha1:${unrelated}`, ready: 'False' })]));
  t.regex(o.refused!, /reports no applied revision, so where the bad commits begin is unknown; the failing revision did not change the target paths itself/);
});

test('YAML with CRLF, a byte-order mark, no final newline, anchors and a YAML 1.1 octal: the revert writes exactly what git revert writes', async (t) => {
  const h = new History();
  const file = (tag: string, replicas: number) =>
    '\ufeff# prod values\r\ndefaults: &defaults\r\n  mode: 0750\r\n  pull: IfNotPresent\r\n\r\nimage:\r\n  <<: *defaults\r\n  tag: ' + tag + '  # set by CI\r\n\r\nscale:\r\n  replicas: ' + replicas;
  h.commit({ [`${APP}values.yaml`]: file('1.0.0', 2) }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ [`${APP}values.yaml`]: file('1.1.0', 2) }, 'release 1.1.0');
  h.commit({ [`${APP}values.yaml`]: file('1.1.0', 5) }, 'scale to 5');
  const o = await everyBackend(t, h, [APP], failedFlux(bad, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.deepEqual(o.after!.get(`${APP}values.yaml`), Buffer.from(file('1.0.0', 5)), 'CRLF, BOM, comments, the anchor, 0750 and the missing final newline, byte for byte');
});

test('YAML edits on adjacent lines (git conflicts): the structural merge keeps every untouched byte, or refuses', async (t) => {
  const h = new History();
  const file = (tag: string, pull: string) => `image:\r\n  tag: ${tag}\r\n  pullPolicy: ${pull}\r\nmode: 0750`;
  h.commit({ [`${APP}values.yaml`]: file('1.0.0', 'IfNotPresent') }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ [`${APP}values.yaml`]: file('1.1.0', 'IfNotPresent') }, 'release 1.1.0');
  h.commit({ [`${APP}values.yaml`]: file('1.1.0', 'Always') }, 'always pull');
  const all = await backends(h.dir);
  try {
    for (const b of all) {
      const o = await locateAndPlan(b.reader, [APP], failedFlux(bad, applied));
      t.deepEqual(o.after!.get(`${APP}values.yaml`), Buffer.from(file('1.0.0', 'Always')), b.name);
    }
  } finally {
    for (const b of all) await b.close();
  }
});

test('a bad change in a shared kustomize base outside the target\'s paths: refused, naming the files and the commit, and how to include them', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/base/deployment.yaml': deploy('6.0.0'), 'apps/podinfo/overlays/prod/kustomization.yaml': 'resources: [../../base]\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ 'apps/podinfo/base/deployment.yaml': deploy('6.1.0') }, 'base: podinfo 6.1.0');
  const o = await everyBackend(t, h, ['apps/podinfo/overlays/prod/'], failedFlux(bad, applied));
  t.regex(o.refused!, /nothing changed in the target paths \(apps\/podinfo\/overlays\/prod\/\); the change touched apps\/podinfo\/base\/deployment\.yaml outside them by [0-9a-f]{12} \(base: podinfo 6\.1\.0\)/);
  t.regex(o.refused!, /add their folder to the target's paths/);
  t.true(o.refused!.includes(bad.slice(0, 12)));
});

test('another target\'s lastgood revert in the range is a commit like any other: not this target\'s "revert that failed", nor the bound below its bad release', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0'), 'apps/frontend/deploy.yaml': 'image: ghcr.io/acme/frontend:1.0\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const frontend = h.commit({ 'apps/frontend/deploy.yaml': 'image: ghcr.io/acme/frontend:2.0\n' }, 'frontend 2.0');
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('7.0.0') }, 'podinfo 7.0.0');
  // lastgood's revert of the other target (one Kustomization holds both), which Flux then attempts
  const other = h.commit({ 'apps/frontend/deploy.yaml': 'image: ghcr.io/acme/frontend:1.0\n' }, `lastgood: revert frontend-prod to ${applied.slice(0, 12)}\n\nLastgood-Target: frontend-prod\nLastgood-Reverts: ${frontend}\nLastgood-Restores: ${applied}\n`);
  const o = await everyBackend(t, h, [APP], failedFlux(other, applied));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'));
  // a podinfo change pushed after it ships in the same sync: both are reverted together, down to the applied revision
  const debug = '          env:\n            - { name: LOG_LEVEL, value: debug }\n';
  const later = h.commit({ [`${APP}deploy.yaml`]: deploy('7.0.0', debug) }, 'podinfo: debug logs');
  const o2 = await everyBackend(t, h, [APP], failedFlux(later, applied));
  t.falsy(o2.refused, o2.refused);
  t.deepEqual(o2.located!.bad.map((c) => c.oid), [later, bad]);
  t.is(o2.located!.lastKnownGood, applied);
  t.is(o2.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'), 'the failing release is undone, not only the commit after the other target\'s revert');
});

test('one commit changes two targets: each target\'s revert undoes only its own paths', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('6.0.0'), 'apps/frontend/deploy.yaml': 'image: ghcr.io/acme/frontend:1.0\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const both = h.commit({ [`${APP}deploy.yaml`]: deploy('6.1.0'), 'apps/frontend/deploy.yaml': 'image: ghcr.io/acme/frontend:1.1\n' }, 'release train 2026.11');
  const o = await everyBackend(t, h, [APP], failedFlux(both, applied));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [both]);
  t.deepEqual([...o.after!.keys()], [`${APP}deploy.yaml`], 'only the target\'s own files are planned');
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('6.0.0'));
  t.deepEqual(o.located!.touched, [`${APP}deploy.yaml`], 'the guard knows only the target\'s files as touched');
});
