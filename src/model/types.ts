import type { ImageRef } from '../observe/image-ref.ts';

/**
 * The model of what a GitOps engine reads and sets for one target, at one revision
 * (DESIGN.md pipeline: "model"). locate asks it which commits changed what the engine builds for
 * the target; verify asks it whether a planned revert changes that, and restores the
 * last-known-good's values of what failed. Computed in TypeScript from the engine objects the
 * target lists (Flux Kustomization, Argo CD Application, HelmRelease) and the repository's trees:
 * no binaries. The render check (src/verify/render.ts) is the second, optional layer.
 */

export type EngineKind = 'flux' | 'argocd' | 'helm' | 'paths';

/** Why the engine reads a file. */
export type InputRole =
  | 'kustomization'
  | 'resource'
  | 'patch'
  | 'component'
  | 'generator'
  | 'transformer'
  | 'replacement'
  | 'config'
  | 'crd'
  | 'values'
  | 'chart'
  | 'source-params'
  /** the engine object's own manifest, kept in git and applied by a parent (its spec at this revision) */
  | 'engine-object'
  /** what makes a Flux `postBuild.substituteFrom` ConfigMap/Secret in the repository (its variables) */
  | 'substitute';

/** One file the engine reads for the target. */
export interface ModelInput {
  /** repo-relative path of the file read (for a symlink the engine follows: the file it points at) */
  path: string;
  /**
   * What of it decides the build: the blob oid, or, for a file only part of which concerns the
   * target (a parent kustomization that also lists other applications), a digest of that part.
   */
  digest: string;
  role: InputRole;
  /**
   * The input whose change makes this one reach the cluster, when a change of this one alone ships
   * nothing: a git chart's templates under helm-controller's `reconcileStrategy: ChartVersion`
   * ship only when `Chart.yaml`'s version changes (source-controller builds no new artifact before).
   */
  shipsWith?: string;
}

/** A place that sets something that can fail: an image, a chart version, Helm values. */
export interface Setter {
  what: 'image' | 'chart' | 'values';
  /** the file (repo-relative), or a field of a cluster object ("Kustomization flux-system/apps spec.images") */
  where: string;
  /** false: set by a cluster object's own spec, which no revert of the repository changes */
  inRepo: boolean;
  image?: ImageRef;
  /** chart pins: the release they belong to, the chart and the version (a semver range where the engine resolves one) */
  chart?: { release: string; name?: string; version?: string };
  /** Helm values: the release and a digest of the values that reach it from this place */
  values?: { release: string; digest: string };
}

export interface TargetModel {
  engine: EngineKind;
  /** the engine objects the model follows, in words: "Flux Kustomization flux-system/apps (spec.path ./apps)" */
  describe: string;
  /** what the engine reads for the target, by path */
  inputs: Map<string, ModelInput>;
  setters: Setter[];
  /** what the model cannot see into and says so: remote bases, plugins, SOPS, post-build variables from the cluster */
  opaque: string[];
  /** what the engine's build would not find or refuse at this revision (the build fails there) */
  missing: string[];
  /** true when some input of the engine's build belongs to the target (false: the engine builds nothing of it here) */
  builds: boolean;
  /**
   * Folders and files whose git entries decide this model: where none of them changed between two
   * commits, the model is the same at both (a history walk skips rebuilding it).
   */
  regions: string[];
  /** what a renderer needs to build the same thing (kustomize-based engines); absent where none can */
  render?: RenderSpec;
}

/** The files and options a kustomize render of this revision needs (src/verify/render.ts). */
export interface RenderSpec {
  engine: 'flux' | 'argocd';
  /** the folder kustomize builds, repo-relative ('' = the repository root) */
  root: string;
  /** every file the engine's build may read (the whole graph, not only the target's part), path → blob oid */
  files: Map<string, string>;
  /** Flux: the Kustomization's spec (folded in as kustomize-controller's generator does) and, when the root has no kustomization file, the resources Flux generates */
  flux?: { spec: Record<string, unknown>; generatedResources?: string[]; substituteFrom?: SubstituteFromValues };
  /** Argo CD: the source's kustomize options and argocd-cm build options */
  argocd?: { kustomize?: Record<string, unknown>; buildOptions?: string[] };
  /**
   * Inputs that are not files of the build but whose content is folded into its options above (the
   * engine object's own manifest in git, `.argocd-source*.yaml`): the render sees their changes.
   */
  folded?: string[];
  /**
   * Set when the build is cut to the part that reaches the target (issue 33: a render costs what
   * the change can affect): the resources each kustomization file on the way leaves out
   * (kustomization path → its entries), and what of those kustomizations reaches across their
   * resources (a prefix, a generator, replacements…), which makes the cut unsound: then the whole
   * build is rendered.
   */
  cut?: RenderCut;
  /** The whole build (every file under the engine's path is read), for when a cut cannot stand. */
  whole?: () => Promise<WholeBuild>;
}

/** The post-build variables of `substituteFrom` sources the repository makes (the others stay placeholders). */
export interface SubstituteFromValues {
  values: Record<string, string>;
  /** every source was found in the repository: a variable none sets is "" as in the controller */
  complete: boolean;
}

export interface RenderCut {
  /** kustomization file → the resources (entries as written) the render leaves out */
  dropped: Map<string, string[]>;
  /** why the cut could change the target's objects (fields of the kustomizations on the way, of the engine object's spec); empty: none */
  across: string[];
  /** the kustomizations rendered, the resources left out: for people */
  kept: number;
  left: number;
}

export interface WholeBuild {
  spec: RenderSpec;
  /** kustomizations outside the cut that rename or carry values across resources (a reference into them may be rewritten by the whole build) */
  renames: string[];
}

/** A model per revision, cached: what locate and verify call. */
export interface TargetModeler {
  /** the engine objects followed, in words (also when no revision was modelled yet) */
  readonly describe: string;
  readonly engine: EngineKind;
  /** the primary engine object followed (a Flux Kustomization, an Argo CD Application), when there is one */
  readonly object?: import('../observe/types.ts').KubeObject;
  /** the model at a commit */
  at(commit: string): Promise<TargetModel>;
  /** a hint: these revisions are modelled next (a reader that fetches on demand is asked for what they read together) */
  prefetch?(commits: string[]): Promise<void>;
  /** the model of a commit with a planned change applied on top (verify) */
  withChange(commit: string, files: import('../repo/types.ts').FileChange[]): Promise<TargetModel>;
}

/** One input that differs between two models. */
export interface InputDelta {
  path: string;
  before?: string;
  after?: string;
  role: InputRole;
  shipsWith?: string;
}

/**
 * The inputs that differ between two models, sorted by path. An input that ships only with
 * another (`shipsWith`) counts only when that one differs too, unless `raw` (which commit made
 * each change, before asking what shipped).
 */
export function inputDelta(a: TargetModel, b: TargetModel, opts: { raw?: boolean } = {}): InputDelta[] {
  const out: InputDelta[] = [];
  for (const path of [...new Set([...a.inputs.keys(), ...b.inputs.keys()])].sort()) {
    const x = a.inputs.get(path);
    const y = b.inputs.get(path);
    if (x && y && x.digest === y.digest) continue;
    const shipsWith = (y ?? x)!.shipsWith;
    out.push({ path, ...(x ? { before: x.digest } : {}), ...(y ? { after: y.digest } : {}), role: (y ?? x)!.role, ...(shipsWith ? { shipsWith } : {}) });
  }
  return opts.raw ? out : shipped(out);
}

/** Drops the changes that ship only with another change absent from the same delta. */
export function shipped(delta: InputDelta[]): InputDelta[] {
  const paths = new Set(delta.map((d) => d.path));
  return delta.filter((d) => !d.shipsWith || paths.has(d.shipsWith));
}
