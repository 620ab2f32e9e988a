import test from 'ava';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '../src/config/load.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { tempDir } from './support/git.ts';
import { backend, cluster, config, configText, failCanary, gitopsRepo, startController, until } from './support/controller-scenario.ts';

/** `lastgood install` and the Dockerfile: what can be checked without a cluster or a container runtime. */

interface K8sDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  [key: string]: any;
}

const CONFIG = `# podinfo in prod
repo:
  url: https://github.com/acme/gitops
targets:
  - name: podinfo-prod
    paths: [apps/podinfo/overlays/prod/]
    resources:
      - { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }
  - name: policies
    paths: [policies/]
    resources:
      - { apiVersion: argoproj.io/v1alpha1, kind: Application, namespace: argocd, name: policies }
`;

async function install(text: string, args: string[] = []): Promise<{ docs: K8sDoc[]; stderr: string; stdout: string }> {
  const dir = tempDir('lastgood-install-');
  const file = path.join(dir, 'lastgood.yaml');
  writeFileSync(file, text);
  const r = await lastgood(['install', '--config', file, ...args]);
  if (r.code !== 0) throw new Error(`install exited ${r.code}: ${r.stderr}`);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sDoc).filter(Boolean);
  return { docs, stderr: r.stderr, stdout: r.stdout };
}

const find = (docs: K8sDoc[], kind: string, namespace?: string) => docs.filter((d) => d.kind === kind && (namespace === undefined || d.metadata.namespace === namespace));

test('install prints the manifests for the config: read-only RBAC on exactly the watched kinds, bound in their namespaces', async (t) => {
  const { docs, stderr } = await install(CONFIG, ['--image', 'registry.example/lastgood:1.2.3']);
  t.is(stderr, '');
  t.deepEqual(docs.map((d) => d.kind), ['Namespace', 'ServiceAccount', 'ClusterRole', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'Deployment', 'Service']);
  const [role] = find(docs, 'ClusterRole');
  t.deepEqual(role!.rules, [
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['flagger.app'], resources: ['canaries'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['kustomize.toolkit.fluxcd.io'], resources: ['kustomizations'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
  ]);
  t.deepEqual(find(docs, 'RoleBinding').filter((b) => b.roleRef.kind === 'ClusterRole').map((b) => b.metadata.namespace), ['argocd', 'flux-system', 'prod']);
  t.is(find(docs, 'ClusterRoleBinding').length, 0, 'nothing cluster-wide');
  const [lease] = find(docs, 'Role', 'lastgood');
  t.deepEqual(lease!.rules, [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: ['lastgood-controller'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  ]);
  for (const d of docs.filter((x) => x.kind !== 'Namespace' && x.kind !== 'ClusterRole' && !(x.kind === 'RoleBinding' && x.roleRef.kind === 'ClusterRole'))) t.is(d.metadata.namespace, 'lastgood', `${d.kind} ${d.metadata.name}`);
  for (const b of find(docs, 'RoleBinding')) t.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: 'lastgood-controller', namespace: 'lastgood' }]);
});

test('install: the Deployment runs non-root on a read-only root, with probes, limits, the config, the token Secret and a mirror volume', async (t) => {
  const { docs, stdout } = await install(CONFIG, ['--image', 'registry.example/lastgood:1.2.3']);
  const [deployment] = find(docs, 'Deployment');
  const spec = deployment!.spec.template.spec;
  const [c] = spec.containers;
  t.is(deployment!.spec.replicas, 2, 'two replicas, one leader');
  t.is(c.image, 'registry.example/lastgood:1.2.3');
  t.deepEqual(c.args, ['controller', '--config', '/etc/lastgood/lastgood.yaml']);
  t.like(spec.securityContext, { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
  t.like(c.securityContext, { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
  t.like(c.resources, { limits: { memory: '512Mi' }, requests: { memory: '128Mi' } });
  t.like(c.livenessProbe, { httpGet: { path: '/healthz', port: 'http' } });
  t.like(c.readinessProbe, { httpGet: { path: '/readyz', port: 'http' } });
  t.deepEqual(c.ports, [{ name: 'http', containerPort: 8080 }]);
  t.deepEqual(c.envFrom, [{ secretRef: { name: 'lastgood' } }]);
  t.deepEqual(c.env.filter((e: { valueFrom?: unknown }) => e.valueFrom).map((e: { name: string }) => e.name), ['POD_NAME', 'POD_NAMESPACE']);
  t.deepEqual(c.volumeMounts.map((m: { mountPath: string }) => m.mountPath), ['/etc/lastgood', '/var/lib/lastgood', '/tmp']);
  t.deepEqual(spec.volumes.map((v: { name: string; configMap?: unknown; emptyDir?: unknown }) => [v.name, v.configMap ? 'configMap' : 'emptyDir']), [['config', 'configMap'], ['mirror', 'emptyDir'], ['tmp', 'emptyDir']]);
  t.true(spec.terminationGracePeriodSeconds > 20, 'longer than the controller\'s own grace for a revert in flight');
  // the config, as written (its comment kept), loads to the same config
  const [configMap] = find(docs, 'ConfigMap');
  t.is(configMap!.data['lastgood.yaml'], CONFIG);
  t.deepEqual(parseConfig(configMap!.data['lastgood.yaml'], 'x.yaml'), parseConfig(CONFIG, 'x.yaml'));
  t.regex(deployment!.spec.template.metadata.annotations['lastgood.dev/config-sha256'], /^[0-9a-f]{64}$/);
  t.regex(stdout, /^# kubectl -n lastgood create secret generic lastgood --from-literal=LASTGOOD_GITHUB_TOKEN=/m);
});

test('install follows the controller settings: namespace, listen port, no leader election, no events; a cluster-scoped resource is bound cluster-wide, with a warning', async (t) => {
  const text = CONFIG.replace('targets:', `controller:\n  namespace: gitops-tools\n  listen: ":9090"\n  leaderElection: false\n  events: false\ntargets:`)
    .replace('name: policies }', 'name: policies }\n      - { apiVersion: v1, kind: Namespace, name: prod }');
  const { docs, stderr } = await install(text);
  t.regex(stderr, /cluster-wide for its kind \(ClusterRoleBinding\)/);
  const [ns] = find(docs, 'Namespace');
  t.is(ns!.metadata.name, 'gitops-tools');
  t.is(find(docs, 'Deployment')[0]!.spec.replicas, 1);
  t.is(find(docs, 'Deployment')[0]!.spec.template.spec.containers[0].ports[0].containerPort, 9090);
  t.is(find(docs, 'Service')[0]!.metadata.annotations!['prometheus.io/port'], '9090');
  t.is(find(docs, 'Role').length, 0, 'no Lease permissions without leader election');
  const rules = find(docs, 'ClusterRole')[0]!.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  t.false(rules.some((r) => r.verbs.includes('create')), 'no write at all without events');
  t.deepEqual(rules.find((r) => r.apiGroups[0] === '')!, { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] });
  t.deepEqual(find(docs, 'ClusterRoleBinding')[0]!.subjects, [{ kind: 'ServiceAccount', name: 'lastgood-controller', namespace: 'gitops-tools' }]);
  const bad = await lastgood(['install', '--config', path.join(tempDir(), 'missing.yaml')]);
  t.is(bad.code, 2);
});

test('install: a repository read through git gets its mirror on the volume (repo.cacheDir), said on stderr; a local path is warned about', async (t) => {
  const gitlab = CONFIG.replace('https://github.com/acme/gitops', 'https://gitlab.example.com/acme/gitops.git');
  const { docs, stderr } = await install(gitlab);
  t.regex(stderr, /repo\.cacheDir set to \/var\/lib\/lastgood\/mirror/);
  const text = find(docs, 'ConfigMap')[0]!.data['lastgood.yaml'] as string;
  t.regex(text, /^# podinfo in prod$/m, 'comments kept');
  t.is(parseConfig(text, 'x.yaml').repo.url, 'https://gitlab.example.com/acme/gitops.git');
  t.is((parseConfig(text, 'x.yaml').repo as { cacheDir?: string }).cacheDir, '/var/lib/lastgood/mirror');
  const local = await install(CONFIG.replace('https://github.com/acme/gitops', './gitops'));
  t.regex(local.stderr, /repo\.url "\.\/gitops" is a local path/);
});

/** A small RBAC check: is this request of the controller allowed by these manifests' rules? */
function allowed(docs: K8sDoc[], req: { method: string; url: string }): boolean {
  const u = new URL(req.url, 'http://x');
  const m = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?$/.exec(u.pathname);
  if (!m) return true; // discovery (/api, /apis/<group>/<version>): non-resource URLs every authenticated user may read (system:discovery)
  const [, group = '', namespace, resource, name] = m;
  const verb = req.method === 'POST' ? 'create' : req.method === 'PUT' ? 'update' : req.method === 'PATCH' ? 'patch' : req.method === 'DELETE' ? 'delete' : u.searchParams.get('watch') === 'true' ? 'watch' : name ? 'get' : 'list';
  const sa = (b: K8sDoc) => (b.subjects as Array<{ name: string }>).some((s) => s.name === 'lastgood-controller');
  const rulesOf = (ref: { kind: string; name: string }, ns: string | undefined) => docs.filter((d) => d.kind === ref.kind && d.metadata.name === ref.name && (ref.kind === 'ClusterRole' || d.metadata.namespace === ns)).flatMap((d) => d.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>);
  const bound = docs.filter((d) => (d.kind === 'ClusterRoleBinding' || (d.kind === 'RoleBinding' && d.metadata.namespace === namespace)) && sa(d));
  return bound.some((b) => rulesOf(b.roleRef, b.metadata.namespace).some((r) => r.apiGroups.includes(group) && r.resources.includes(resource!) && r.verbs.includes(verb) && (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name)))));
}

test('the RBAC install prints is enough: every request the controller makes through a failure and its revert is allowed, and no more is granted', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const be = await backend('local', repo);
  const text = configText({ url: be.url });
  const { docs } = await install(text.replace(/  listen: 127\.0\.0\.1:0\n/, ''));
  const { controller, acted } = await startController(kube, config(text), be.open());
  t.teardown(() => controller.stop());
  await until('ready', () => controller.ready && controller.isLeader);
  failCanary(kube);
  await until('the revert', () => acted[0]);
  await until('the Event', () => kube.events().length === 1);
  await controller.stop();
  const requests = kube.requests();
  t.true(requests.some((r) => r.method === 'POST' && /leases/.test(r.url)));
  t.true(requests.some((r) => r.method === 'PUT' && /leases\/lastgood-controller/.test(r.url)));
  t.true(requests.some((r) => r.method === 'POST' && /events/.test(r.url)));
  const refused = requests.filter((r) => !allowed(docs, r)).map((r) => `${r.method} ${r.url}`);
  t.deepEqual(refused, []);
  // and nothing a request did not need: no write verbs but the lease's and the Event's
  const verbs = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role').flatMap((d) => (d.rules as Array<{ verbs: string[]; resources: string[] }>).flatMap((r) => r.verbs.map((v) => `${r.resources.join()}:${v}`)));
  t.deepEqual([...new Set(verbs.filter((v) => !/:(get|list|watch)$/.test(v)))].sort(), ['events:create', 'leases:create', 'leases:update']);
});

test('Dockerfile: every file it copies exists, .dockerignore keeps them, and the entrypoint starts from that layout', async (t) => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const copies = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
  t.deepEqual(copies, ['package.json', 'package-lock.json', 'package.json', 'bin', 'src', 'templates']);
  for (const c of copies) t.notThrows(() => readFileSync(path.join(ROOT, c === 'bin' ? 'bin/lastgood.js' : c === 'src' ? 'src/cli.ts' : c === 'templates' ? 'templates/install/deployment.yaml' : c)), c);
  const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  t.is(ignore[0], '*', 'everything else is left out of the build context');
  for (const c of new Set(copies)) t.true(ignore.some((l) => l.replace(/^!/, '').replace(/\/$/, '') === c), `${c} is in the build context`);
  t.regex(dockerfile, /^USER 65532:65532$/m, 'non-root, the uid the manifests run it as');
  const entry = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(dockerfile)![1]!) as string[];
  const cmd = JSON.parse(/^CMD (.+)$/m.exec(dockerfile)![1]!) as string[];
  t.deepEqual(entry, ['node', '/app/bin/lastgood.js']);
  const { docs } = await install(CONFIG);
  t.deepEqual(cmd, find(docs, 'Deployment')[0]!.spec.template.spec.containers[0].args, 'the image default is what the Deployment runs');

  // the image's /app, as the COPY lines lay it out (node_modules from this checkout)
  const app = path.join(tempDir('lastgood-image-'), 'app');
  mkdirSync(app);
  for (const c of new Set(copies)) if (c !== 'package-lock.json') cpSync(path.join(ROOT, c), path.join(app, c), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  const { spawnSync } = await import('node:child_process');
  const run = (args: string[]) => spawnSync(process.execPath, [path.join(app, entry[1]!.replace('/app/', '')), ...args], { cwd: app, encoding: 'utf8' });
  t.is(run(['--version']).stdout.trim(), '0.1.0');
  const help = run(['controller', '--help']);
  t.is(help.status, 0, help.stderr);
  t.regex(help.stdout, /--config <file>/);
  const configFile = path.join(app, '..', 'lastgood.yaml');
  writeFileSync(configFile, CONFIG);
  const printed = run(['install', '--config', configFile]);
  t.is(printed.status, 0, printed.stderr);
  t.regex(printed.stdout, /kind: Deployment/);
  // without a cluster the controller says so and exits 2 at start, naming the kubeconfig it could not read (it got as far as the Kubernetes client)
  const noCluster = spawnSync(process.execPath, [path.join(app, 'bin/lastgood.js'), ...cmd.slice(0, 2), configFile], { cwd: app, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: tempDir(), KUBECONFIG: path.join(tempDir(), 'none'), LASTGOOD_GITHUB_TOKEN: 'ghs_imageLayoutTest000000000000000000' }, timeout: 60_000 });
  t.is(noCluster.status, 2, noCluster.stderr);
  t.regex(noCluster.stderr, /none: cannot read the kubeconfig: /);
});
