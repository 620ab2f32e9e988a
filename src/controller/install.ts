/**
 * `lastgood install --config FILE`: the controller's manifests (templates/install/) filled in for
 * one config, as one multi-document YAML stream for `kubectl apply -f -`:
 *
 * - the ClusterRole allows get, list and watch on exactly the kinds the targets name, and create
 *   on events.k8s.io Events (the one optional write; left out with `controller.events: false`);
 *   metric checks add get (by name) on what they read: the rollout's ReplicaSets (or
 *   ControllerRevisions), and the AnalysisTemplates, MetricTemplates and Canaries they name;
 * - it is bound with a RoleBinding in each namespace the targets name; a ClusterRoleBinding only
 *   when a resource has no namespace (a cluster-scoped kind);
 * - Lease permissions (get, create, update) only in the controller's namespace, only with leader
 *   election (two replicas; one without it);
 * - the config goes into the ConfigMap as written (comments kept), with `repo.cacheDir` on the
 *   mirror volume for a remote repository that is not read through the GitHub API.
 *
 * Resource names (plurals) cannot be asked of a cluster here: they follow the Kubernetes rule for
 * guessing them (k8s.io/apimachinery pkg/api/meta/restmapper.go, UnsafeGuessKindToResource), which
 * every kind lastgood reads follows; `kubectl api-resources` shows the real ones.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isSeq, parseAllDocuments, parseDocument, Scalar, stringify, visit, type Document, type Node } from 'yaml';
import { parseDuration } from '../config/duration.ts';
import { ConfigSchema, Controller as ControllerSchema, resolveTarget, type Config } from '../config/schema.ts';
import { analysisObjects, rolloutKinds } from '../analysis/index.ts';
import { InputError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { parseListen } from './http.ts';

export const INSTALL_DIR = fileURLToPath(new URL('../../templates/install/', import.meta.url));
export const MONITORING_DIR = fileURLToPath(new URL('../../templates/monitoring/', import.meta.url));
export const DEFAULT_NAMESPACE = 'lastgood';
/** where the Deployment mounts the CA bundle of `--ca-file` (the file Node's NODE_EXTRA_CA_CERTS names) */
export const CA_DIR = '/etc/lastgood/ca';
/**
 * Node's flags for the controller container (NODE_OPTIONS): a young generation of a few MB and an
 * old generation sized well inside the container's memory limit make the heap collect early
 * instead of growing into it (the benchmark runs the controller with the same flags).
 */
export const CONTROLLER_NODE_OPTIONS = '--max-semi-space-size=4 --max-old-space-size=256';
/** where the Deployment mounts its volume for the mirror of a remote repository */
export const MIRROR_DIR = '/var/lib/lastgood/mirror';

export interface InstallOptions {
  config: Config;
  /** the config file's text, kept as written in the ConfigMap */
  configText: string;
  /** the controller image; else REGISTRY/lastgood:VERSION from `registry`; else controller.image */
  image?: string;
  registry?: string;
  namespace?: string;
  /** PEM certificates of a private CA (the git host's), mounted and named in NODE_EXTRA_CA_CERTS */
  ca?: { file: string; pem: string };
}

export interface InstallOutput {
  yaml: string;
  /** what a person should know (a local repository path cannot be reached from a pod, ...) */
  warnings: string[];
  /** the same manifests as a kustomize base (`kubectl apply -k DIR`): file name → content */
  kustomize: Record<string, string>;
}

/**
 * The image the Deployment runs. There is no default: a name no registry serves would leave the
 * pods in ImagePullBackOff with nothing said at install time.
 */
export function controllerImage(opts: Pick<InstallOptions, 'image' | 'registry'>, configured: string | undefined): string {
  if (opts.image) return opts.image;
  if (opts.registry) return `${opts.registry.replace(/\/+$/, '')}/lastgood:${VERSION}`;
  if (configured) return configured;
  throw new InputError(`install needs the controller image: --image IMAGE, --registry REGISTRY (for REGISTRY/lastgood:${VERSION}), or controller.image in the config; build and push it from the Dockerfile the package ships: in node_modules/lastgood (or a clone), \`npm pack && docker build -t REGISTRY/lastgood:${VERSION} .\` (README "Install")`);
}

/** Kind → resource name, as Kubernetes guesses it: lower case; -s, -x, -z, -ch, -sh take "es"; a consonant and y take "ies". */
export function pluralOf(kind: string): string {
  const k = kind.toLowerCase();
  if (k.endsWith('endpoints')) return k;
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : '');

export async function installManifests(opts: InstallOptions): Promise<InstallOutput> {
  const { config } = opts;
  const controller = ControllerSchema.parse(config.controller ?? {});
  const image = controllerImage(opts, controller.image);
  if (opts.ca && !/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.test(opts.ca.pem)) {
    throw new InputError(`${opts.ca.file}: not a PEM certificate bundle (no -----BEGIN CERTIFICATE----- … -----END CERTIFICATE----- block)`);
  }
  const namespace = opts.namespace ?? controller.namespace ?? DEFAULT_NAMESPACE;
  const warnings: string[] = [];
  if (controller.namespace && opts.namespace && controller.namespace !== opts.namespace) {
    warnings.push(`controller.namespace is ${controller.namespace} but --namespace is ${opts.namespace}: the Lease lives in ${controller.namespace}, where these manifests grant nothing`);
  }
  const resources = config.targets.flatMap((t) => t.resources);
  const template = async (file: string) => parseAllDocuments(await readFile(path.join(INSTALL_DIR, file), 'utf8')) as Document[];
  const docs: Document[] = [];

  // Namespace, ServiceAccount
  for (const file of ['namespace.yaml', 'serviceaccount.yaml']) {
    for (const doc of await template(file)) {
      if (file === 'namespace.yaml') doc.setIn(['metadata', 'name'], namespace);
      else doc.setIn(['metadata', 'namespace'], namespace);
      docs.push(doc);
    }
  }

  // ClusterRole: read-only on the watched kinds
  const byGroup = new Map<string, Set<string>>();
  for (const r of resources) {
    const g = groupOf(r.apiVersion);
    if (!byGroup.has(g)) byGroup.set(g, new Set());
    byGroup.get(g)!.add(pluralOf(r.kind));
  }
  const rules: Array<Record<string, unknown>> = [...byGroup].sort(([a], [b]) => a.localeCompare(b)).map(([group, plurals]) => ({ apiGroups: [group], resources: [...plurals].sort(), verbs: ['get', 'list', 'watch'] }));
  // metric checks read by name what they need (docs/metrics.md): get only
  const reads = config.targets.flatMap((t) => {
    const resolved = resolveTarget(config, t);
    return [...analysisObjects(resolved).slice(1), ...rolloutKinds(resolved)];
  });
  const getOnly = new Map<string, Set<string>>();
  for (const r of reads) {
    const g = groupOf(r.apiVersion);
    if (byGroup.get(g)?.has(pluralOf(r.kind))) continue;
    if (!getOnly.has(g)) getOnly.set(g, new Set());
    getOnly.get(g)!.add(pluralOf(r.kind));
  }
  for (const [group, plurals] of [...getOnly].sort(([a], [b]) => a.localeCompare(b))) rules.push({ apiGroups: [group], resources: [...plurals].sort(), verbs: ['get'] });
  if (controller.events) rules.push({ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] });
  const [role] = await template('clusterrole.yaml');
  role!.setIn(['rules'], flowLists(role!.createNode(rules)));
  docs.push(role!);

  // bound where the targets look: per namespace, cluster-wide only when needed
  const namespaces = [...new Set([...resources, ...reads].map((r) => r.namespace).filter((n): n is string => Boolean(n)))].sort();
  for (const ns of namespaces) {
    const [binding] = await template('rolebinding.yaml');
    binding!.setIn(['metadata', 'namespace'], ns);
    binding!.setIn(['subjects', 0, 'namespace'], namespace);
    docs.push(binding!);
  }
  if ([...resources, ...reads].some((r) => !r.namespace)) {
    const [binding] = await template('clusterrolebinding.yaml');
    binding!.setIn(['subjects', 0, 'namespace'], namespace);
    docs.push(binding!);
    warnings.push('a target resource has no namespace: the read permissions are granted cluster-wide for its kind (ClusterRoleBinding)');
  }
  if (controller.leaderElection) {
    for (const doc of await template('leader-election.yaml')) {
      doc.setIn(['metadata', 'namespace'], namespace);
      if (doc.get('kind') === 'Role') {
        // only this replica set's Lease
        doc.setIn(['rules', 0, 'resourceNames'], doc.createNode([controller.leaseName], { flow: true }));
        // create cannot be limited by name (the name is not known to RBAC before the object exists)
        const rule = doc.getIn(['rules', 0]);
        if (isMap(rule)) {
          doc.setIn(['rules', 0, 'verbs'], doc.createNode(['get', 'update'], { flow: true }));
          const create = flowLists(doc.createNode({ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] }));
          const list = doc.get('rules');
          if (isSeq(list)) list.items.push(create);
        }
      } else doc.setIn(['subjects', 0, 'namespace'], namespace);
      docs.push(doc);
    }
  }

  // the config
  const configText = withMirror(opts.configText, config, warnings);
  const [configMap] = await template('configmap.yaml');
  configMap!.setIn(['metadata', 'namespace'], namespace);
  const literal = new Scalar(configText);
  literal.type = Scalar.BLOCK_LITERAL;
  configMap!.setIn(['data', 'lastgood.yaml'], literal);
  docs.push(configMap!);

  // the Deployment and its Service
  const { port } = parseListen(controller.listen);
  const [deployment] = await template('deployment.yaml');
  const d = deployment!;
  d.setIn(['metadata', 'namespace'], namespace);
  d.setIn(['spec', 'replicas'], controller.leaderElection ? 2 : 1);
  d.setIn(['spec', 'template', 'metadata', 'annotations', 'lastgood.dev/config-sha256'], createHash('sha256').update(configText).digest('hex'));
  d.setIn(['spec', 'template', 'spec', 'containers', 0, 'image'], image);
  d.setIn(['spec', 'template', 'spec', 'containers', 0, 'ports', 0, 'containerPort'], port);
  const env = d.getIn(['spec', 'template', 'spec', 'containers', 0, 'env']);
  if (isSeq(env)) env.items.push(d.createNode({ name: 'NODE_OPTIONS', value: CONTROLLER_NODE_OPTIONS }));
  if (!controller.leaderElection) d.deleteIn(['spec', 'template', 'spec', 'affinity']); // one replica: nothing to spread
  let caMap: Document | undefined;
  if (opts.ca) {
    // Node reads NODE_EXTRA_CA_CERTS once, at start, and adds it to its built-in roots (fetch, git over HTTPS, the GitHub API)
    if (isSeq(env)) env.items.push(d.createNode({ name: 'NODE_EXTRA_CA_CERTS', value: `${CA_DIR}/ca.crt` }));
    const mounts = d.getIn(['spec', 'template', 'spec', 'containers', 0, 'volumeMounts']);
    if (isSeq(mounts)) mounts.items.push(d.createNode({ name: 'ca', mountPath: CA_DIR, readOnly: true }));
    const volumes = d.getIn(['spec', 'template', 'spec', 'volumes']);
    if (isSeq(volumes)) volumes.items.push(d.createNode({ name: 'ca', configMap: { name: 'lastgood-ca' } }));
    [caMap] = await template('ca.yaml');
    caMap!.setIn(['metadata', 'namespace'], namespace);
    const pem = new Scalar(opts.ca.pem.endsWith('\n') ? opts.ca.pem : `${opts.ca.pem}\n`);
    pem.type = Scalar.BLOCK_LITERAL;
    caMap!.setIn(['data', 'ca.crt'], pem);
    d.setIn(['spec', 'template', 'metadata', 'annotations', 'lastgood.dev/ca-sha256'], createHash('sha256').update(opts.ca.pem).digest('hex'));
    docs.push(caMap!);
  }
  docs.push(d);
  const [service] = await template('service.yaml');
  service!.setIn(['metadata', 'namespace'], namespace);
  service!.setIn(['metadata', 'annotations', 'prometheus.io/port'], String(port));
  service!.setIn(['spec', 'ports', 0, 'port'], port);
  docs.push(service!);
  if (controller.leaderElection) {
    const [pdb] = await template('poddisruptionbudget.yaml');
    pdb!.setIn(['metadata', 'namespace'], namespace);
    docs.push(pdb!);
  }

  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(config.repo.url)) {
    warnings.push(`repo.url "${config.repo.url}" is a local path: the controller's pod must have the repository there (mount it), or use the repository's URL`);
  }
  if (parseDuration(controller.interval)! > 60_000) warnings.push(`controller.interval ${controller.interval}: confirmations of a failure the engine does not call final take that long each`);
  const about = `# lastgood controller for ${config.targets.length} target${config.targets.length === 1 ? '' : 's'} (${config.targets.map((t) => t.name).join(', ')})\n`;
  // a document of a multi-document template prints its own "---": one per document
  const print = (list: Document[]) => list.map((doc) => `---\n${doc.toString({ lineWidth: 0 }).replace(/^---\n/, '')}`).join('');
  const yaml = `${about}# kubectl -n ${namespace} create secret generic lastgood --from-literal=LASTGOOD_GITHUB_TOKEN=… ; then kubectl apply -f this file\n${print(docs)}`;
  return { yaml, warnings, kustomize: kustomizeBase({ docs, configMap: configMap!, caMap, configText, ca: opts.ca?.pem, namespace, about, print }) };
}

/**
 * The printed manifests as a kustomize base, for deploying lastgood itself through GitOps (Flux
 * Kustomization, Argo CD Application, `kubectl apply -k`). The config and the CA bundle are files
 * of their own, made into ConfigMaps by configMapGenerator: kustomize names each after a hash of
 * its content and rewrites the Deployment's references, so a changed config rolls the pods.
 */
function kustomizeBase(b: { docs: Document[]; configMap: Document; caMap: Document | undefined; configText: string; ca: string | undefined; namespace: string; about: string; print: (docs: Document[]) => string }): Record<string, string> {
  const generated = new Set([b.configMap, b.caMap]);
  const generator = (name: string, file: string) => ({ name, namespace: b.namespace, files: [file], options: { labels: { 'app.kubernetes.io/name': 'lastgood', 'app.kubernetes.io/component': 'controller' } } });
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: ['lastgood.k8s.yaml'],
    configMapGenerator: [generator('lastgood-config', 'lastgood.yaml'), ...(b.ca ? [generator('lastgood-ca', 'ca.crt')] : [])],
  };
  const files: Record<string, string> = {
    'kustomization.yaml': `${b.about}# kubectl -n ${b.namespace} create secret generic lastgood --from-literal=LASTGOOD_GITHUB_TOKEN=… ; then kubectl apply -k this folder\n${stringify(kustomization, { lineWidth: 0 })}`,
    'lastgood.k8s.yaml': `${b.about}# written by lastgood install --kustomize; the config is lastgood.yaml beside it\n${b.print(b.docs.filter((d) => !generated.has(d)))}`,
    'lastgood.yaml': b.configText,
  };
  if (b.ca) files['ca.crt'] = b.ca;
  return files;
}

/** RBAC rules read best with their lists on one line: `verbs: [get, list, watch]`. */
function flowLists<T extends Node>(node: T): T {
  // the lists inside the rules, not the list of rules itself (the root: key null)
  visit(node, { Seq: (key, seq) => void (key !== null && (seq.flow = true)) });
  return node;
}

/**
 * A remote repository read through git (not the GitHub API) is mirrored on disk: on the volume
 * the Deployment mounts, so a restarted container does not fetch it again. Added only where the
 * config says nothing about it and the schema knows the setting.
 */
function withMirror(text: string, config: Config, warnings: string[]): string {
  const repo = config.repo as Config['repo'] & { cacheDir?: string; transport?: string };
  const remote = /^https?:\/\//i.test(repo.url);
  const viaApi = repo.transport === 'api' || (repo.transport !== 'git' && /^https:\/\/github\.com\//i.test(repo.url));
  if (!remote || viaApi || repo.cacheDir) return text;
  const doc = parseDocument(text);
  doc.setIn(['repo', 'cacheDir'], MIRROR_DIR);
  const edited = doc.toString({ lineWidth: 0 });
  if (!ConfigSchema.safeParse(doc.toJS()).success) return text;
  warnings.push(`repo.cacheDir set to ${MIRROR_DIR} (the mirror volume) in the ConfigMap`);
  return edited;
}

/**
 * `lastgood install --monitoring`: the controller's monitoring, as Flagger and Argo Rollouts ship
 * theirs (templates/monitoring/): a PrometheusRule with the alerts a team pages on, a
 * ServiceMonitor for the controller's Service, and the Grafana dashboard as a ConfigMap Grafana's
 * sidecar loads. They need the Prometheus Operator's CRDs, so they are printed apart from the
 * controller's manifests.
 */
export async function monitoringManifests(opts: { config: Config; namespace?: string }): Promise<{ yaml: string; kustomize: Record<string, string> }> {
  const controller = ControllerSchema.parse(opts.config.controller ?? {});
  const namespace = opts.namespace ?? controller.namespace ?? DEFAULT_NAMESPACE;
  const template = async (file: string) => parseDocument(await readFile(path.join(MONITORING_DIR, file), 'utf8'));
  const docs: Document[] = [];
  for (const file of ['prometheus-rule.yaml', 'servicemonitor.yaml', 'dashboard-configmap.yaml']) {
    const doc = await template(file);
    doc.setIn(['metadata', 'namespace'], namespace);
    if (file === 'dashboard-configmap.yaml') {
      const json = new Scalar(await readFile(path.join(MONITORING_DIR, 'grafana-dashboard.json'), 'utf8'));
      json.type = Scalar.BLOCK_LITERAL;
      doc.setIn(['data', 'lastgood.json'], json);
    }
    docs.push(doc);
  }
  const about = `# lastgood monitoring (needs the Prometheus Operator's CRDs): alerts, scrape config, Grafana dashboard\n`;
  const body = docs.map((doc) => `---\n${doc.toString({ lineWidth: 0 })}`).join('');
  const kustomization = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['lastgood-monitoring.k8s.yaml'] };
  return {
    yaml: `${about}${body}`,
    kustomize: { 'kustomization.yaml': `${about}${stringify(kustomization, { lineWidth: 0 })}`, 'lastgood-monitoring.k8s.yaml': `${about}${body}` },
  };
}
