import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '../src/config/load.ts';
import { VERSION } from '../src/version.ts';
import { startKubeEmulator } from './support/kube-emulator.ts';
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
  // an image is required: the tests that do not name one name the registry
  const image = args.some((a) => a === '--image' || a === '--registry') || /^\s+image:/m.test(text) ? [] : ['--registry', 'registry.example'];
  const r = await lastgood(['install', '--config', file, ...image, ...args]);
  if (r.code !== 0) throw new Error(`install exited ${r.code}: ${r.stderr}`);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sDoc).filter(Boolean);
  return { docs, stderr: r.stderr, stdout: r.stdout };
}

const find = (docs: K8sDoc[], kind: string, namespace?: string) => docs.filter((d) => d.kind === kind && (namespace === undefined || d.metadata.namespace === namespace));

test('install prints the manifests for the config: read-only RBAC on exactly the watched kinds, bound in their namespaces', async (t) => {
  const { docs, stderr } = await install(CONFIG, ['--image', 'registry.example/lastgood:1.2.3']);
  t.is(stderr, '');
  t.deepEqual(docs.map((d) => d.kind), ['Namespace', 'ServiceAccount', 'ClusterRole', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'Deployment', 'Service', 'PodDisruptionBudget']);
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
  t.like(c.resources, { limits: { memory: '768Mi' }, requests: { memory: '128Mi' } });
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
  t.is(find(docs, 'PodDisruptionBudget').length, 0, 'one replica: a budget of one unavailable pod would allow everything or block every drain');
  t.is(find(docs, 'Deployment')[0]!.spec.template.spec.affinity, undefined, 'one replica: nothing to spread');
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

test('Dockerfile (checked without a Docker engine, which this machine has not): a digest-pinned base, the npm package as published, non-root; the image layout starts the controller', async (t) => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);
  t.true(froms.length > 0);
  for (const from of froms) t.regex(from, /^[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}$/, `${from}: pinned by digest`);
  // what goes in is the package: the tarball `npm pack` makes, nothing of the checkout
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  t.is(/^ARG PACKAGE=(\S+)$/m.exec(dockerfile)![1], `lastgood-${pkg.version}.tgz`, 'the tarball npm pack names');
  const copies = [...dockerfile.matchAll(/^(?:COPY|ADD) (.+)$/gm)].map((m) => m[1]!);
  t.deepEqual(copies.filter((c) => !c.startsWith('--from=')), ['${PACKAGE} /tmp/lastgood.tgz']);
  // from another image, only kustomize for the render check (test/version.test.ts checks its pin)
  t.deepEqual(copies.filter((c) => c.startsWith('--from=')).map((c) => c.split(' ').slice(1).join(' ')), ['/app/kustomize /usr/local/bin/kustomize']);
  const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  t.deepEqual(ignore, ['*', '!lastgood-*.tgz'], 'only the tarball is in the build context');
  const user = /^USER (\d+):(\d+)$/m.exec(dockerfile);
  t.truthy(user, 'a numeric non-root user');
  t.not(user![1], '0');
  const { docs } = await install(CONFIG);
  const spec = find(docs, 'Deployment')[0]!.spec.template.spec;
  t.is(Number(user![1]), spec.securityContext.runAsUser, 'the uid the manifests run it as');
  t.true(spec.containers[0].securityContext.readOnlyRootFilesystem);
  const entry = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(dockerfile)![1]!) as string[];
  const cmd = JSON.parse(/^CMD (.+)$/m.exec(dockerfile)![1]!) as string[];
  t.deepEqual(entry, ['node', '/app/bin/lastgood.js']);
  t.deepEqual(cmd, spec.containers[0].args, 'the image default is what the Deployment runs');

  // the image's /app, made as the RUN line makes it: the real tarball, unpacked by tar, no node_modules
  const dest = tempDir('lastgood-image-pack-');
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dest], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as Array<{ filename: string }>;
  const app = path.join(tempDir('lastgood-image-'), 'app');
  mkdirSync(app);
  const unpack = /tar -xzf \/tmp\/lastgood\.tgz -C \/app (.*?) &&/.exec(dockerfile)![1]!.split(' ');
  execFileSync('tar', ['-xzf', path.join(dest, packed[0]!.filename), '-C', app, ...unpack]);
  t.false(readdirSync(app).includes('node_modules'));
  const run = (args: string[]) => spawnSync(process.execPath, [path.join(app, entry[1]!.replace('/app/', '')), ...args], { cwd: app, encoding: 'utf8' });
  t.is(run(['--version']).stdout.trim(), pkg.version);
  const version = run(['version']);
  t.is(version.status, 0, version.stderr);
  t.regex(version.stdout, new RegExp(`^lastgood ${pkg.version.replaceAll('.', '\\.')}\nnode v\\d+\\.\\d+\\.\\d+\nrender: `));
  const help = run(['controller', '--help']);
  t.is(help.status, 0, help.stderr);
  t.regex(help.stdout, /--config <file>/);
  const configFile = path.join(app, '..', 'lastgood.yaml');
  writeFileSync(configFile, CONFIG);
  const printed = run(['install', '--config', configFile, '--registry', 'registry.example']);
  t.is(printed.status, 0, printed.stderr);
  t.regex(printed.stdout, /kind: Deployment/);
  // without a cluster the controller says so and exits 2 at start, naming the kubeconfig it could not read (it got as far as the Kubernetes client)
  const noCluster = spawnSync(process.execPath, [path.join(app, 'bin/lastgood.js'), ...cmd.slice(0, 2), configFile], { cwd: app, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: tempDir(), KUBECONFIG: path.join(tempDir(), 'none'), LASTGOOD_GITHUB_TOKEN: 'ghs_imageLayoutTest000000000000000000' }, timeout: 60_000 });
  t.is(noCluster.status, 2, noCluster.stderr);
  t.regex(noCluster.stderr, /none: cannot read the kubeconfig: /);
});

test('install needs an image: --image, --registry (REGISTRY/lastgood:VERSION) or controller.image, never a name no registry serves', async (t) => {
  const dir = tempDir('lastgood-install-');
  const file = path.join(dir, 'lastgood.yaml');
  writeFileSync(file, CONFIG);
  const none = await lastgood(['install', '--config', file]);
  t.is(none.code, 2);
  t.is(none.stdout, '', 'nothing printed');
  t.regex(none.stderr, /install needs the controller image: --image IMAGE, --registry REGISTRY \(for REGISTRY\/lastgood:0\.1\.0\), or controller\.image in the config/);
  const image = (docs: K8sDoc[]) => find(docs, 'Deployment')[0]!.spec.template.spec.containers[0].image as string;
  t.is(image((await install(CONFIG, ['--registry', 'ghcr.io/acme/'])).docs), `ghcr.io/acme/lastgood:${VERSION}`);
  const configured = CONFIG.replace('targets:', 'controller:\n  image: registry.example/tools/lastgood@sha256:' + 'a'.repeat(64) + '\ntargets:');
  t.is(image((await install(configured)).docs), 'registry.example/tools/lastgood@sha256:' + 'a'.repeat(64));
  t.is(image((await install(configured, ['--image', 'other/lastgood:2'])).docs), 'other/lastgood:2', 'the flag wins over the config');
});

test('install: two replicas get a PodDisruptionBudget of one and are spread over nodes', async (t) => {
  const { docs } = await install(CONFIG);
  const [pdb] = find(docs, 'PodDisruptionBudget', 'lastgood');
  const [deployment] = find(docs, 'Deployment');
  t.is(pdb!.spec.maxUnavailable, 1);
  t.deepEqual(pdb!.spec.selector.matchLabels, deployment!.spec.selector.matchLabels, 'the budget covers exactly the controller pods');
  const [term] = deployment!.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
  t.is(term.podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
  t.deepEqual(term.podAffinityTerm.labelSelector.matchLabels, deployment!.spec.template.metadata.labels);
});

const PEM = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUExampleOnlyNotARealCertificate0wCgYIKoZIzj0EAwIw\n-----END CERTIFICATE-----\n';

test('install --ca-file: the CA bundle as a ConfigMap, mounted read-only and named in NODE_EXTRA_CA_CERTS; not a PEM is refused', async (t) => {
  const dir = tempDir('lastgood-ca-');
  const ca = path.join(dir, 'ca.pem');
  writeFileSync(ca, PEM);
  const { docs } = await install(CONFIG, ['--ca-file', ca]);
  const [configMap] = docs.filter((d) => d.kind === 'ConfigMap' && d.metadata.name === 'lastgood-ca');
  t.is(configMap!.data['ca.crt'], PEM);
  t.is(configMap!.metadata.namespace, 'lastgood');
  const spec = find(docs, 'Deployment')[0]!.spec.template.spec;
  const [c] = spec.containers;
  t.deepEqual(c.env.find((e: { name: string }) => e.name === 'NODE_EXTRA_CA_CERTS'), { name: 'NODE_EXTRA_CA_CERTS', value: '/etc/lastgood/ca/ca.crt' });
  t.deepEqual(c.volumeMounts.find((m: { name: string }) => m.name === 'ca'), { name: 'ca', mountPath: '/etc/lastgood/ca', readOnly: true });
  t.deepEqual(spec.volumes.find((v: { name: string }) => v.name === 'ca'), { name: 'ca', configMap: { name: 'lastgood-ca' } });
  const without = find((await install(CONFIG)).docs, 'Deployment')[0]!.spec.template.spec.containers[0];
  t.false(without.env.some((e: { name: string }) => e.name === 'NODE_EXTRA_CA_CERTS'), 'no CA, no variable (a missing file makes Node warn at every start)');

  writeFileSync(ca, 'not a certificate\n');
  const bad = await lastgood(['install', '--config', writeConfig(CONFIG), '--registry', 'r.example', '--ca-file', ca]);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /ca\.pem: not a PEM certificate bundle/);
  const missing = await lastgood(['install', '--config', writeConfig(CONFIG), '--registry', 'r.example', '--ca-file', path.join(dir, 'none.pem')]);
  t.is(missing.code, 2);
  t.regex(missing.stderr, /none\.pem: cannot read the CA bundle/);
});

function writeConfig(text: string): string {
  const file = path.join(tempDir('lastgood-install-'), 'lastgood.yaml');
  writeFileSync(file, text);
  return file;
}

/** `kubectl kustomize` where the machine has kubectl (the render oracle); undefined where it has not. */
function kubectl(): string | undefined {
  const r = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  return r.status === 0 ? 'kubectl' : undefined;
}

test('install --kustomize writes a base that kubectl kustomize renders into the printed manifests (ConfigMaps named by content)', async (t) => {
  const dir = tempDir('lastgood-ca-');
  const ca = path.join(dir, 'ca.pem');
  writeFileSync(ca, PEM);
  const configFile = writeConfig(CONFIG);
  const base = path.join(tempDir('lastgood-kustomize-'), 'deploy', 'lastgood');
  const written = await lastgood(['install', '--config', configFile, '--registry', 'registry.example', '--ca-file', ca, '--kustomize', base]);
  t.is(written.code, 0, written.stderr);
  t.deepEqual(readdirSync(base).sort(), ['ca.crt', 'kustomization.yaml', 'lastgood.k8s.yaml', 'lastgood.yaml']);
  t.is(readFileSync(path.join(base, 'lastgood.yaml'), 'utf8'), CONFIG, 'the config as written, comments kept');
  t.is(readFileSync(path.join(base, 'ca.crt'), 'utf8'), PEM);
  const bin = kubectl();
  if (!bin) {
    t.log('kubectl is not installed: the kustomize base is not rendered here');
    t.pass();
    return;
  }
  const rendered = spawnSync(bin, ['kustomize', base], { encoding: 'utf8' });
  t.is(rendered.status, 0, rendered.stderr);
  const docs = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as K8sDoc);
  const printed = (await install(CONFIG, ['--ca-file', ca])).docs;
  const key = (d: K8sDoc) => `${d.kind} ${d.metadata.namespace ?? ''}/${d.metadata.name.replace(/-[a-z0-9]{10}$/, '')}`;
  t.deepEqual(docs.map(key).sort(), printed.map(key).sort(), 'the same objects');
  const [config] = docs.filter((d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith('lastgood-config-'));
  t.is(config!.data['lastgood.yaml'], CONFIG);
  const volumes = find(docs, 'Deployment')[0]!.spec.template.spec.volumes as Array<{ name: string; configMap?: { name: string } }>;
  t.is(volumes.find((v) => v.name === 'config')!.configMap!.name, config!.metadata.name, 'kustomize points the Deployment at the generated ConfigMap');
  t.regex(volumes.find((v) => v.name === 'ca')!.configMap!.name, /^lastgood-ca-[a-z0-9]{10}$/);
  // apart from the generated names, the Deployment is the printed one
  const strip = (d: K8sDoc) => JSON.parse(JSON.stringify(d.spec).replace(/"(lastgood-(?:config|ca))-[a-z0-9]{10}"/g, '"$1"'));
  t.deepEqual(strip(find(docs, 'Deployment')[0]!), strip(find(printed, 'Deployment')[0]!));
});

test('install --kustomize into a base edited by hand: refused and nothing written; the same again: written; --force: replaced', async (t) => {
  const configFile = writeConfig(CONFIG);
  const base = path.join(tempDir('lastgood-kustomize-edit-'), 'lastgood');
  const args = ['install', '--config', configFile, '--registry', 'registry.example', '--kustomize', base];
  t.is((await lastgood(args)).code, 0);
  const ours = readFileSync(path.join(base, 'kustomization.yaml'), 'utf8');
  // unchanged: written again, nothing to say
  const again = await lastgood(args);
  t.is(again.code, 0, again.stderr);
  t.notRegex(again.stdout, /replaced/);
  // a person adds a patch to the kustomization: not lost
  const edited = `${ours}patches:\n  - path: my-resources.yaml\n`;
  writeFileSync(path.join(base, 'kustomization.yaml'), edited);
  const before = readFileSync(path.join(base, 'lastgood.k8s.yaml'), 'utf8');
  const refused = await lastgood(args);
  t.is(refused.code, 2, refused.stdout + refused.stderr);
  t.regex(refused.stderr, /kustomization\.yaml differs from what lastgood writes \(edited by hand\?\): nothing written; run without --kustomize to see lastgood's, or pass --force to replace it/);
  t.is(readFileSync(path.join(base, 'kustomization.yaml'), 'utf8'), edited, 'the edit is kept');
  t.is(readFileSync(path.join(base, 'lastgood.k8s.yaml'), 'utf8'), before);
  const forced = await lastgood([...args, '--force']);
  t.is(forced.code, 0, forced.stderr);
  t.regex(forced.stdout, /\(replaced: kustomization\.yaml\)/);
  t.is(readFileSync(path.join(base, 'kustomization.yaml'), 'utf8'), ours);
});

test('install --kustomize at a file, or under one: bad usage naming the path, nothing written', async (t) => {
  const configFile = writeConfig(CONFIG);
  const dir = tempDir('lastgood-kustomize-file-');
  const file = path.join(dir, 'not-a-folder');
  writeFileSync(file, 'mine\n');
  const at = await lastgood(['install', '--config', configFile, '--registry', 'registry.example', '--kustomize', file]);
  t.is(at.code, 2, at.stderr);
  t.is(at.stderr, `lastgood: --kustomize ${file}: is a file, not a folder; nothing was written\n`);
  const under = path.join(file, 'base');
  const below = await lastgood(['install', '--config', configFile, '--registry', 'registry.example', '--kustomize', under]);
  t.is(below.code, 2, below.stderr);
  t.is(below.stderr, `lastgood: --kustomize ${under}: lies under a file, not a folder; nothing was written\n`);
  t.is(readFileSync(file, 'utf8'), 'mine\n');
  t.deepEqual(readdirSync(dir), ['not-a-folder']);
});

test('the controller\'s probes give a busy process 5 s to answer', async (t) => {
  const deployment = find((await install(CONFIG)).docs, 'Deployment')[0]!;
  const container = (deployment.spec.template.spec.containers as Array<{ livenessProbe: { timeoutSeconds?: number }; readinessProbe: { timeoutSeconds?: number } }>)[0]!;
  t.is(container.livenessProbe.timeoutSeconds, 5);
  t.is(container.readinessProbe.timeoutSeconds, 5);
});

test('every manifest install writes is accepted by the Kubernetes emulator (the upstream OpenAPI and CRD schemas, strictly): printed, with a CA, one replica, and rendered from the kustomize base', async (t) => {
  const ca = path.join(tempDir('lastgood-ca-'), 'ca.pem');
  writeFileSync(ca, PEM);
  const variants: Array<[string, K8sDoc[]]> = [
    ['printed', (await install(CONFIG)).docs],
    ['with a CA', (await install(CONFIG, ['--ca-file', ca])).docs],
    ['one replica, cluster-scoped', (await install(CONFIG.replace('targets:', 'controller:\n  leaderElection: false\n  namespace: tools\ntargets:').replace('name: policies }', 'name: policies }\n      - { apiVersion: v1, kind: Namespace, name: prod }'))).docs],
  ];
  const bin = kubectl();
  if (bin) {
    const base = path.join(tempDir('lastgood-kustomize-'), 'base');
    const written = await lastgood(['install', '--config', writeConfig(CONFIG), '--registry', 'registry.example', '--ca-file', ca, '--kustomize', base]);
    t.is(written.code, 0, written.stderr);
    const rendered = spawnSync(bin, ['kustomize', base], { encoding: 'utf8' });
    t.is(rendered.status, 0, rendered.stderr);
    variants.push(['kustomize', parseAllDocuments(rendered.stdout).map((d) => d.toJS() as K8sDoc)]);
  } else t.log('kubectl is not installed: the kustomize base is not rendered here');
  for (const [name, docs] of variants) {
    const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'argocd'] });
    try {
      // as kubectl apply orders them: the Namespace first
      for (const doc of [...docs.filter((d) => d.kind === 'Namespace'), ...docs.filter((d) => d.kind !== 'Namespace')]) {
        t.notThrows(() => kube.apply(doc), `${name}: ${doc.kind} ${doc.metadata.name}`);
      }
    } finally {
      await kube.close();
    }
  }
  // and the checks bite: what the schema does not know is refused
  const kube = await startKubeEmulator();
  try {
    const [deployment] = find(variants[0]![1], 'Deployment');
    const wrong = structuredClone(deployment!);
    wrong.metadata.namespace = 'default';
    wrong.spec.template.spec.containers[0].securityContext.readOnlyRootFilesytem = true;
    t.throws(() => kube.apply(wrong), { message: /readOnlyRootFilesytem/ });
    const pdb = structuredClone(find(variants[0]![1], 'PodDisruptionBudget')[0]!);
    pdb.metadata.namespace = 'default';
    pdb.spec.maxUnavailable = [1];
    t.throws(() => kube.apply(pdb), { message: /spec\.maxUnavailable/ });
  } finally {
    await kube.close();
  }
});
