import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lastgood } from './support/cli.ts';
import { tempDir, writeFile } from './support/git.ts';
import { startKubeEmulator } from './support/kube-emulator.ts';

/**
 * Errors a person can act on, on the Kubernetes side (issue 36): a kubeconfig whose server is not
 * a Kubernetes API (any web server answers 404 for the paths it does not have, and every object
 * then looked "not found": PROGRESSING, exit 0, and in CI lastgood never acted) is an error naming
 * the server, exit 3; a server nothing answers at is named with the cause, as kubectl names it
 * ("connect: connection refused"), never a bare "fetch failed". Through the CLI, as a user runs it.
 */

const CONFIG = `repo:
  url: ./gitops
  branch: main
targets:
  - name: podinfo-prod
    paths: [apps/podinfo/overlays/prod/]
    resources:
      - { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }
`;

/** A kubeconfig naming `server`, as kubectl writes one (a token; TLS not verified, as the emulator's). */
function kubeconfig(dir: string, server: string): string {
  return writeFile(dir, 'kubeconfig', `apiVersion: v1
kind: Config
clusters:
  - name: somewhere
    cluster: { server: '${server}', insecure-skip-tls-verify: true }
users:
  - name: someone
    user: { token: not-a-real-token }
contexts:
  - name: somewhere
    context: { cluster: somewhere, user: someone }
current-context: somewhere
`);
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

test('a server that is not a Kubernetes API (404 for everything, /api included): exit 3, naming the server; no verdict', async (t) => {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
  });
  const port = await listen(server);
  t.teardown(() => void server.close());
  const dir = tempDir('lastgood-not-kube-');
  const config = writeFile(dir, 'lastgood.yaml', CONFIG);
  const kc = kubeconfig(dir, `http://127.0.0.1:${port}`);
  for (const args of [['check', '--config', config], ['check', '--config', config, '--json'], ['run', '--config', config, '--dry-run']]) {
    const r = await lastgood([...args, '--kubeconfig', kc]);
    t.is(r.code, 3, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    t.is(r.stdout, '', 'no verdict: nothing was read');
    t.is(r.stderr, `lastgood: kubernetes: the server at http://127.0.0.1:${port} is not a Kubernetes API: GET /api answered HTTP 404: 404 page not found; check the kubeconfig's server (or --context)\n`);
  }
  // the object's discovery answered 404, then /api was asked, once, and the run stopped there
  t.deepEqual(paths.slice(0, 2), ['GET /apis/flagger.app/v1beta1', 'GET /api']);
});

test('a server nothing answers at: exit 3, naming the server and the cause (connection refused), not "fetch failed"', async (t) => {
  // a port that was free a moment ago: nothing listens there
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
  const dir = tempDir('lastgood-no-kube-');
  const config = writeFile(dir, 'lastgood.yaml', CONFIG);
  const kc = kubeconfig(dir, `https://127.0.0.1:${port}`);
  for (const args of [['check', '--config', config], ['run', '--config', config, '--dry-run']]) {
    const r = await lastgood([...args, '--kubeconfig', kc]);
    t.is(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
    t.is(r.stderr, `lastgood: kubernetes: cannot reach the Kubernetes API at https://127.0.0.1:${port}: connection refused (ECONNREFUSED)\n`);
    t.notRegex(r.stderr, /fetch failed/);
  }
});

test('an http:// server named as https:// (TLS to a plain HTTP port): named, with what TLS said', async (t) => {
  const server = createServer((_req, res) => void res.writeHead(404).end());
  const port = await listen(server);
  t.teardown(() => void server.close());
  const dir = tempDir('lastgood-tls-kube-');
  const config = writeFile(dir, 'lastgood.yaml', CONFIG);
  const r = await lastgood(['check', '--config', config, '--kubeconfig', kubeconfig(dir, `https://127.0.0.1:${port}`)]);
  t.is(r.code, 3, r.stderr);
  t.regex(r.stderr, new RegExp(`^lastgood: kubernetes: cannot reach the Kubernetes API at https://127\\.0\\.0\\.1:${port}: TLS: `));
});

test('on a Kubernetes API, an object that is not there (its kind not served, or not created) is still NotFound, exit 0: /api is asked once', async (t) => {
  // no CRDs: flagger.app is not served, as in a cluster without Flagger; no Deployment either
  const kube = await startKubeEmulator({ crds: [], namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const dir = tempDir('lastgood-kube-notfound-');
  const config = writeFile(dir, 'lastgood.yaml', CONFIG);
  const r = await lastgood(['check', '--config', config, '--json'], { env: { KUBECONFIG: kube.kubeconfigPath } });
  t.is(r.code, 0, r.stderr);
  const evidence = (JSON.parse(r.stdout) as { targets: Array<{ evidence: Array<{ kind: string; reason: string }> }> }).targets[0]!.evidence;
  t.deepEqual(evidence.map((e) => [e.kind, e.reason]), [['Canary', 'NotFound'], ['Deployment', 'NotFound']]);
  t.is(kube.requests(/^\/api\/?$/).length, 1, 'discovery asked once');
});
