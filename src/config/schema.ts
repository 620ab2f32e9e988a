import { z } from 'zod';
import { parseTime } from '../observe/times.ts';
import { AnalysisProviders, analysisWorkload, TargetAnalysis, type ResolvedAnalysis } from '../analysis/config.ts';
import { parseDuration } from './duration.ts';

/** A duration string ("15m", "1h30m"), kept as text in the config and parsed where used. */
export const Duration = z
  .string()
  .refine((s) => parseDuration(s) !== undefined, { message: 'expected a duration like 30s, 15m, 1h30m' })
  .describe('A duration: digits and a unit (ms, s, m, h, d), e.g. 15m or 1h30m');

/**
 * A repo-relative path a revert may touch. Every check runs on the normalised path ("./apps//x" is
 * "apps/x"): whatever normalises to the repository root ("./.", ".//") is refused, as are "..",
 * absolute paths, backslashes and NUL; paths through symlinks are refused against the repository at plan time.
 */
export const RepoPath = z
  .string()
  .min(1, 'a path must not be empty')
  .refine((p) => !p.startsWith('/') && !/^[A-Za-z]:/.test(p), { message: 'a path must be relative to the repository root, not absolute' })
  .refine((p) => !p.includes('\\') && !p.includes('\0'), { message: 'a path must use "/" separators' })
  .refine((p) => !p.split('/').map((s) => s.trim()).includes('..'), { message: 'a path must not contain ".."' })
  .refine((p) => normalizePath(p).replace(/\/$/, '').trim() !== '', { message: 'a path must not be empty or the whole repository (it names a file or folder inside it)' })
  .refine((p) => !normalizePath(p).split('/').some((s) => s.toLowerCase() === '.git'), { message: 'a path must not reach into ".git"' })
  .describe('A path relative to the repository root; a trailing "/" names a folder');

export const Action = z.enum(['revert', 'alert', 'none']);

/** Hook timeouts: at least 1s, at most 1h (a longer one would overflow the timer and fire at once). */
export const HOOK_TIMEOUT_MIN_MS = 1000;
export const HOOK_TIMEOUT_MAX_MS = 3_600_000;
const HookTimeout = Duration.refine((d) => {
  const ms = parseDuration(d);
  return ms === undefined || (ms >= HOOK_TIMEOUT_MIN_MS && ms <= HOOK_TIMEOUT_MAX_MS);
}, { message: 'a hook timeout must be between 1s and 1h' });

/** The names of environment variables a command hook may inherit although they look secret. */
export const HookEnv = z
  .object({
    inherit: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')).describe(
      'variables the command inherits although lastgood withholds them by default: its own tokens (GITHUB_TOKEN, LASTGOOD_GITHUB_TOKEN, webhook URLs) and every variable whose name contains TOKEN, SECRET, PASSWORD, KEY, WEBHOOK or CREDENTIAL',
    ),
  })
  .strict();

/** A user-defined recovery step run before lastgood acts: POST the verdict as JSON, or a command reading it on stdin. */
export const HookSpec = z.union([
  z
    .object({
      url: z.string().url().describe('POST the verdict as JSON to this URL; a 2xx answer is success'),
      timeout: HookTimeout.default('60s').describe('give up (and count the hook as failed) after this long: 1s to 1h'),
    })
    .strict(),
  z
    .object({
      command: z.array(z.string().min(1)).min(1).describe('program and arguments (no shell); the verdict JSON is on stdin; exit 0 is success'),
      timeout: HookTimeout.default('60s').describe('kill the command and every process it started (its process group) after this long, and count the hook as failed: 1s to 1h'),
      env: HookEnv.optional().describe('the command runs with lastgood\'s environment minus its tokens and secret-looking variables; `inherit: [NAME, …]` passes those named through'),
    })
    .strict(),
]);

/**
 * What to do with one failure class: act (`revert`), report (`alert`), ignore (`none`), wait for
 * self-healing and then act, or run a recovery hook and then act.
 */
export const Policy = z.union([
  Action,
  z
    .object({
      wait: Duration.describe('how long to give the target to heal itself'),
      then: z.enum(['revert', 'alert']).describe('what to do when it has not healed by then'),
    })
    .strict(),
  z
    .object({
      hook: HookSpec,
      wait: Duration.optional().describe('give the target this long to heal itself before the hook runs'),
      then: Action.default('revert').describe('what to do after the hook succeeded'),
      onHookFailure: Action.default('alert').describe('what to do when the hook failed (error, non-2xx, non-zero exit, timeout)'),
    })
    .strict(),
]);

export const OnFailure = z
  .object({
    analysis: Policy.default('revert'),
    promotion: Policy.default({ wait: '10m', then: 'revert' }),
    stuck: Policy.default('alert'),
  })
  .strict();

/** A duration, or "off" to disable a guard. */
export const DurationOrOff = z.union([z.literal('off'), Duration]);

export const Strategy = z.enum(['revert', 'restore', 'revert-or-restore']);
export const Mode = z.enum(['commit', 'pull-request']);

/** Settings every target inherits from `defaults` and may override. */
const TargetSettings = {
  mode: Mode.describe('commit: push to the branch; pull-request: open a PR'),
  strategy: Strategy.describe('revert: undo exactly the bad commits (3-way); restore: set the target paths to their tree at the last-known-good'),
  confirmations: z.number().int().min(1).max(100).describe('consecutive failed assessments before acting'),
  stuckAfter: Duration.describe('progressing longer than this is stuck'),
  onFailure: OnFailure,
  freeze: z.enum(['auto', 'off']).describe('stop image automation from re-shipping the bad version'),
  settle: z.boolean().describe('hold a revert while another promotion or sync of the target is in flight'),
  maxAge: DurationOrOff.describe('ignore failures older than this ("off": never)'),
  cooldown: DurationOrOff.describe('no second revert of the same target within this long after the last one ("off": none)'),
  soak: Duration.describe('a revision is recorded as a verified last-known-good only after the target has stayed healthy at it for this long (as Kargo\'s requiredSoakTime)'),
  freezeUntil: z.iso
    .datetime({ offset: true, message: 'expected an ISO 8601 time with a zone, like 2026-11-01T12:00:00Z' })
    .refine((t) => parseTime(t) !== undefined, { message: 'not a valid time (no such day or hour)' })
    .describe('no reverts (and no hooks) before this time, ISO 8601 with a zone; also per object: annotation lastgood.dev/hold'),
} as const;

/**
 * The blast-radius guard refuses a change that empties the target or, with strategy revert,
 * changes files no bad commit changed. A target may allow either, knowingly.
 */
export const BlastRadius = z
  .object({
    allowEmpty: z.boolean().default(false).describe('allow a change that deletes every manifest of the target or empties a folder it lists'),
    allowUntouchedFiles: z.boolean().default(false).describe('strategy revert: allow changing files that no bad commit changed'),
  })
  .strict()
  .describe('what the blast-radius guard lets through for this target (default: nothing)');

/** Failures where an automatic revert does harm by default; a target may opt in to reverting anyway. */
export const RevertHazards = z
  .array(z.enum(['flagger-promotion-failure']))
  .describe('revert even in these hazardous cases (flagger-promotion-failure: Flagger >= 1.44 keeps the canary serving after a failed promotion, and a new revision then routes all traffic to the broken primary)');

/**
 * A Kubernetes namespace: a DNS-1123 label (apimachinery validation.IsDNS1123Label), so that it is
 * one segment of the API paths lastgood reads (issue 35: "a b" or "../x" addressed another object).
 */
export const KubeNamespace = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace is a DNS-1123 label: lower-case letters, digits and "-", at most 63, starting and ending with a letter or digit');

/** An object name: one API path segment (apimachinery path.IsValidPathSegmentName: not "." or "..", no "/" or "%"), no control or space character. */
export const KubeName = z
  .string()
  .min(1)
  .max(253)
  .refine((n) => n !== '.' && n !== '..' && !/[/%\s\p{Cc}]/u.test(n), { message: 'an object name may not be "." or "..", nor hold "/", "%", a space or a control character (it is a segment of the API path)' });

export const Resource = z
  .object({
    apiVersion: z.string().min(1).regex(/^([a-z0-9.-]+\/)?v[0-9a-z]+$/, 'an apiVersion is GROUP/VERSION or VERSION, like apps/v1 or v1'),
    kind: z.string().min(1).regex(/^[A-Za-z][A-Za-z0-9]*$/, 'a kind is a word of letters and digits, like Deployment'),
    namespace: KubeNamespace.optional(),
    name: KubeName,
  })
  .strict();

/**
 * The branch lastgood reads and writes: git check-ref-format's rules for a branch (refs.c
 * check_refname_component): refused here, with the line, rather than by the first push.
 */
export const BranchName = z
  .string()
  .min(1)
  .refine((b) => !b.startsWith('refs/'), { message: 'give the branch name (main), not the ref (refs/heads/main)' })
  .refine((b) => !/[\s\p{Cc}~^:?*[\\]/u.test(b) && !b.includes('..') && !b.includes('@{') && !b.includes('//') && !/^[-/.]|[/.]$|\.lock$|\/\.|^@$/.test(b), {
    message: 'not a git branch name (git check-ref-format: no space, control character, "..", "~", "^", ":", "?", "*", "[", "\\", "@{" or "//"; not starting with "-", "." or "/"; not ending with "/", "." or ".lock")',
  });

/**
 * repo.url: an https:// or http:// URL, or a local path. A git remote helper (`ext::`, `fd::`) runs
 * a command, and a value starting with "-" reads as an option to a git command: both refused.
 */
export const RepoUrl = z
  .string()
  .min(1)
  .refine((u) => !u.startsWith('-'), { message: 'a repository URL or path may not start with "-"' })
  .refine((u) => !/^[a-z][a-z0-9+.-]*::/i.test(u), { message: 'git remote helpers (ext::, fd::, …) are not repository URLs lastgood reads: give an https:// URL or a local path' })
  .refine((u) => !/[\p{Cc}]/u.test(u), { message: 'a repository URL or path may not hold a control character' });

/** A label, reviewer or assignee name on a pull request: one line of text. */
const RequestName = z.string().min(1).refine((v) => !/[\p{Cc}]/u.test(v), { message: 'no control character (a newline) in a name' });

/** A target name makes the branch lastgood/<target>/<sha>: git check-ref-format's rules hold for it. */
export const TargetName = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/, 'a target name is lower-case letters, digits, ".", "_" and "-" (it names git branches)')
  .refine((n) => !n.includes('..'), { message: 'a target name must not contain ".." (git refuses it in a branch name)' })
  .refine((n) => !n.endsWith('.lock'), { message: 'a target name must not end with ".lock" (git refuses it in a branch name)' });

export const Target = z
  .object({
    name: TargetName,
    paths: z.array(RepoPath).min(1, 'a target needs at least one path'),
    resources: z.array(Resource).min(1, 'a target needs at least one resource to tell its health'),
    mode: TargetSettings.mode.optional(),
    strategy: TargetSettings.strategy.optional(),
    confirmations: TargetSettings.confirmations.optional(),
    stuckAfter: TargetSettings.stuckAfter.optional(),
    onFailure: OnFailure.partial().optional(),
    freeze: TargetSettings.freeze.optional(),
    settle: TargetSettings.settle.optional(),
    maxAge: TargetSettings.maxAge.optional(),
    cooldown: TargetSettings.cooldown.optional(),
    soak: TargetSettings.soak.optional(),
    freezeUntil: TargetSettings.freezeUntil.optional(),
    blastRadius: BlastRadius.optional(),
    allowRevertDuring: RevertHazards.optional(),
    analysis: TargetAnalysis.optional().describe('metric checks run after each rollout of the target\'s workload (docs/metrics.md)'),
  })
  .strict();

/** Where a secret (a webhook URL) comes from: an environment variable or a file (a mounted Secret). Never the value itself. */
export const SecretRef = z.union([
  z.object({ env: z.string().min(1).describe('name of the environment variable holding the value') }).strict(),
  z.object({ file: z.string().min(1).describe('path of a file holding the value (e.g. a mounted Secret)') }).strict(),
]);

export const NotifyEvent = z.enum(['alert', 'reverted', 'revert-failed', 'unmerged', 'recovered']);

/** Notifications: a generic JSON webhook and a Slack-compatible incoming webhook. */
export const Notify = z
  .object({
    webhook: z.object({ urlFrom: SecretRef }).strict().optional().describe('generic webhook (JSON POST); default: env LASTGOOD_WEBHOOK_URL'),
    slack: z.object({ urlFrom: SecretRef }).strict().optional().describe('Slack incoming webhook; default: env LASTGOOD_SLACK_WEBHOOK_URL'),
    events: z.array(NotifyEvent).default(['alert', 'reverted', 'revert-failed', 'unmerged', 'recovered']).describe("which outcomes to send (unmerged: the controller's reminder that a revert request is still open, controller.remindUnmerged; recovered: the controller saw the target healthy again at lastgood's revert, with the recovery's phases)"),
    timeout: Duration.default('10s'),
  })
  .strict();

export const Person = z.object({ name: z.string().min(1), email: z.string().min(3) }).strict();

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');

/** repo.auth: where the git credentials are (never the credentials themselves). */
export const GitAuth = z
  .object({
    tokenEnv: EnvName.optional().describe('environment variable holding an access token'),
    tokenFile: z.string().min(1).optional().describe('file holding an access token (a mounted secret)'),
    username: z.string().min(1).optional().describe('user name sent with the token (default: the host\'s convention: oauth2 on GitLab, x-token-auth on Bitbucket, x-access-token on GitHub)'),
    usernameEnv: EnvName.optional(),
    usernameFile: z.string().min(1).optional(),
    passwordEnv: EnvName.optional().describe('environment variable holding a password (with a user name)'),
    passwordFile: z.string().min(1).optional().describe('file holding a password (with a user name)'),
    scheme: z.enum(['basic', 'bearer']).optional().describe('basic (default): user name and token as HTTP Basic auth; bearer: the token as a Bearer token'),
  })
  .strict()
  .refine((a) => [a.tokenEnv, a.tokenFile, a.passwordEnv, a.passwordFile].filter(Boolean).length === 1, {
    message: 'name exactly one secret: tokenEnv, tokenFile, passwordEnv or passwordFile',
  });

/** `lastgood controller`: the in-cluster watcher's own settings (every one has a default). */
export const Controller = z
  .object({
    namespace: KubeNamespace.optional().describe('namespace of the leader-election Lease (default: the pod\'s own, from POD_NAMESPACE, else "lastgood")'),
    leaseName: KubeName.default('lastgood-controller').describe('name of the coordination.k8s.io Lease the replicas elect a leader with'),
    leaderElection: z.boolean().default(true).describe('elect one acting replica through the Lease (off: this process always acts; the repository still prevents a second revert)'),
    listen: z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):\d{1,5}$/, 'expected [host]:port, like :8080 or 127.0.0.1:8080')
      .refine((l) => Number(/:(\d+)$/.exec(l)?.[1] ?? 0) <= 65535, { message: 'the port must be at most 65535 (0: any free port)' })
      .default(':8080')
      .describe('address of /healthz, /readyz and /metrics'),
    interval: Duration.default('10s').describe('how soon a failed target that waits for confirmations is assessed again with no change (each assessment counts)'),
    events: z.boolean().default(true).describe('create a Kubernetes Event on the failing object when a revert is made'),
    record: z.boolean().default(true).describe('record verified last-known-good revisions (git notes) as targets are observed healthy'),
    concurrency: z.number().int().min(1).max(16).default(2).describe('how many targets may do repository work (revert, record) at once'),
    remindUnmerged: Duration.optional().describe("in pull-request mode: while lastgood's revert request of a failure stays open and the target stays failed, remind this often (an `unmerged` notification and lastgood_revert_reminders_total), first this long after the request was opened; default: no reminder"),
    image: z.string().min(1).optional().describe('the controller image `lastgood install` writes into the Deployment (its --image and --registry flags take precedence)'),
  })
  .strict();

export const ConfigSchema = z
  .object({
    $schema: z.string().optional(),
    repo: z
      .object({
        url: RepoUrl.describe('https URL of the repository on any git host (GitHub, GitLab, Gitea/Forgejo, Bitbucket, Azure DevOps, a plain git server), or a local path to a working copy or bare repository'),
        branch: BranchName.default('main'),
        apiUrl: z.string().url().optional().describe('the host\'s API base URL when it is not where lastgood looks by default: GitHub Enterprise Server (https://HOST/api/v3), a GitLab under a relative URL root, Bitbucket Cloud\'s (https://api.bitbucket.org/2.0)'),
        provider: z
          .enum(['github', 'gitlab', 'gitea', 'forgejo', 'bitbucket', 'bitbucket-server', 'azure-devops', 'git'])
          .optional()
          .describe('which host repo.url is on, for a self-hosted one (github.com, gitlab.com, codeberg.org, bitbucket.org, dev.azure.com and *.visualstudio.com are known from the URL): pull-request mode opens the request through that host\'s API; git: push the branch only'),
        author: Person.default({ name: 'lastgood', email: 'lastgood@users.noreply.github.com' }).describe('author of revert commits'),
        auth: GitAuth.optional().describe('credentials for a git host over HTTPS (default: the token in env LASTGOOD_GIT_TOKEN, if set)'),
        cacheDir: z.string().min(1).optional().describe('a folder kept between runs (the controller\'s volume): the bare mirror of a remote repository, and the render check\'s renders by digest; default: a temporary folder per run (no renders kept)'),
        insecure: z.boolean().optional().describe('allow a plain http:// repo.url (a server inside the cluster, a test); credentials to another machine are then sent in clear text'),
        transport: z.enum(['auto', 'api', 'git']).optional().describe('auto (default): the GitHub API for GitHub URLs, git over HTTPS for any other host; git: git over HTTPS for GitHub too; api: the GitHub API'),
        signing: z
          .object({
            format: z.literal('ssh').default('ssh').describe('an SSH signature (git gpg.format=ssh)'),
            keyFile: z.string().min(1).describe('an unencrypted OpenSSH ed25519 private key, or a PKCS#8 PEM ed25519/RSA key (a mounted secret)'),
          })
          .strict()
          .optional()
          .describe('sign revert commits pushed over git (the GitHub API backend has GitHub sign them)'),
        github: z
          .object({
            environment: z
              .string()
              .min(1)
              .refine((t) => t.includes('{target}'), { message: 'the environment name must contain {target}: each target has its own' })
              .default('{target}')
              .describe('the deployment environment lastgood records a target\'s observed health in ("{target}" is replaced by the target\'s name)'),
          })
          .strict()
          .optional()
          .describe('GitHub repositories: verified last-known-good records are Deployments, one environment per target'),
      })
      .strict(),
    defaults: z
      .object({
        mode: TargetSettings.mode.default('pull-request'),
        strategy: TargetSettings.strategy.default('revert'),
        confirmations: TargetSettings.confirmations.default(2),
        stuckAfter: TargetSettings.stuckAfter.default('15m'),
        onFailure: OnFailure.default({ analysis: 'revert', promotion: { wait: '10m', then: 'revert' }, stuck: 'alert' }),
        freeze: TargetSettings.freeze.default('auto'),
        settle: TargetSettings.settle.default(true),
        maxAge: TargetSettings.maxAge.default('20m'),
        cooldown: TargetSettings.cooldown.default('30m'),
        soak: TargetSettings.soak.default('5m'),
        freezeUntil: TargetSettings.freezeUntil.optional(),
      })
      .strict()
      .default({
        mode: 'pull-request',
        strategy: 'revert',
        confirmations: 2,
        stuckAfter: '15m',
        onFailure: { analysis: 'revert', promotion: { wait: '10m', then: 'revert' }, stuck: 'alert' },
        freeze: 'auto',
        settle: true,
        maxAge: '20m',
        cooldown: '30m',
        soak: '5m',
      }),
    pullRequest: z
      .object({
        labels: z.array(RequestName).default(['lastgood', 'rollback']),
        reviewers: z.array(RequestName).default([]),
        assignees: z.array(RequestName).default([]),
        draft: z.boolean().default(false),
        autoMerge: z.boolean().default(false),
      })
      .strict()
      .default({ labels: ['lastgood', 'rollback'], reviewers: [], assignees: [], draft: false, autoMerge: false }),
    notify: Notify.optional(),
    analysis: AnalysisProviders.optional(),
    controller: Controller.optional().describe('settings of `lastgood controller` (all optional)'),
    render: z
      .object({
        kustomize: z.string().min(1).default('auto').describe('auto: kustomize, else kubectl kustomize, found on the PATH; off: never render; or the path of a kustomize (or kubectl) binary'),
      })
      .strict()
      .optional()
      .describe('the render check: build each planned revert as the engine would, with kustomize, before writing it'),
    targets: z.array(Target).min(1, 'at least one target is needed'),
  })
  .strict()
  .superRefine((config, ctx) => {
    const seen = new Set<string>();
    config.targets.forEach((t, i) => {
      if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: ['targets', i, 'name'], message: `duplicate target name "${t.name}"` });
      seen.add(t.name);
      const workload = t.analysis ? analysisWorkload(t.analysis, t.resources) : undefined;
      if (typeof workload === 'string') ctx.addIssue({ code: 'custom', path: ['targets', i, 'analysis'], message: workload });
      // a wait as long as maxAge could never act: the failure would be ignored before the wait ends
      const maxAge = t.maxAge ?? config.defaults.maxAge;
      const maxAgeMs = maxAge === 'off' ? undefined : parseDuration(maxAge);
      const onFailure = { ...config.defaults.onFailure, ...t.onFailure };
      for (const cls of ['analysis', 'promotion', 'stuck'] as const) {
        const wait = waitOf(onFailure[cls]);
        if (maxAgeMs !== undefined && wait !== undefined && (parseDuration(wait) ?? 0) >= maxAgeMs) {
          ctx.addIssue({
            code: 'custom',
            path: ['targets', i, t.onFailure?.[cls] !== undefined ? 'onFailure' : 'maxAge'],
            message: `onFailure.${cls} waits ${wait}, not less than maxAge ${maxAge}: the failure would be ignored before the wait ends (raise maxAge or set it to "off")`,
          });
        }
      }
    });
  });

function waitOf(policy: z.output<typeof Policy>): string | undefined {
  return typeof policy === 'object' ? policy.wait : undefined;
}

export type Config = z.output<typeof ConfigSchema>;
export type TargetConfig = z.output<typeof Target>;
export type PolicyConfig = z.output<typeof Policy>;
export type OnFailureConfig = z.output<typeof OnFailure>;
export type HookSpecConfig = z.output<typeof HookSpec>;

type ActionName = z.output<typeof Action>;
/** A hook as the pipeline runs it: its timeout resolved to milliseconds. */
export type ResolvedHook = ({ url: string } | { command: string[]; env?: z.output<typeof HookEnv> }) & { timeoutMs: number };
/**
 * A failure class's policy as the pipeline reads it (issue 38): every duration resolved once, here,
 * when the config is loaded; no stage parses one again.
 */
export type ResolvedPolicy =
  | ActionName
  | { then: Exclude<ActionName, 'none'>; waitMs: number }
  | { hook: ResolvedHook; waitMs?: number; then: ActionName; onHookFailure: ActionName };
export type ResolvedOnFailure = Record<keyof OnFailureConfig, ResolvedPolicy>;

export function resolvePolicy(policy: PolicyConfig): ResolvedPolicy {
  if (typeof policy === 'string') return policy;
  if (!('hook' in policy)) return { then: policy.then, waitMs: parseDuration(policy.wait)! };
  const { timeout, ...spec } = policy.hook;
  return {
    hook: { ...spec, timeoutMs: parseDuration(timeout)! },
    ...(policy.wait !== undefined ? { waitMs: parseDuration(policy.wait)! } : {}),
    then: policy.then,
    onHookFailure: policy.onHookFailure,
  };
}

/** Notifications as report/notify.ts sends them: the timeout resolved to milliseconds. */
export type ResolvedNotify = Omit<NotifyConfig, 'timeout'> & { timeoutMs: number };

export function resolveNotify(notify: NotifyConfig | undefined): ResolvedNotify | undefined {
  if (!notify) return undefined;
  const { timeout, ...rest } = notify;
  return { ...rest, timeoutMs: parseDuration(timeout)! };
}

export function resolveOnFailure(onFailure: OnFailureConfig): ResolvedOnFailure {
  return { analysis: resolvePolicy(onFailure.analysis), promotion: resolvePolicy(onFailure.promotion), stuck: resolvePolicy(onFailure.stuck) };
}
export type NotifyConfig = z.output<typeof Notify>;
export type ControllerConfig = z.output<typeof Controller>;
export type SecretRefConfig = z.output<typeof SecretRef>;

/** A target with every default filled in: what the pipeline works with. */
export interface ResolvedTarget {
  name: string;
  paths: string[];
  resources: z.output<typeof Resource>[];
  mode: z.output<typeof Mode>;
  strategy: z.output<typeof Strategy>;
  confirmations: number;
  stuckAfterMs: number;
  onFailure: ResolvedOnFailure;
  freeze: 'auto' | 'off';
  /** hold a revert while another promotion or sync of the target is in flight */
  settle: boolean;
  /** failures older than this are ignored; undefined: never */
  maxAgeMs: number | undefined;
  /** no second revert within this long after the last one; 0: off */
  cooldownMs: number;
  /** how long the target must stay healthy at a revision before it is recorded as a verified last-known-good */
  soakMs: number;
  /** no reverts or hooks before this ISO time */
  freezeUntil: string | undefined;
  blastRadius: { allowEmpty: boolean; allowUntouchedFiles: boolean };
  /** hazards this target opts in to reverting anyway */
  allowRevertDuring: Array<z.output<typeof RevertHazards>[number]>;
  /** metric checks after each rollout of its workload (src/analysis/) */
  analysis?: ResolvedAnalysis;
}

export function resolveTarget(config: Config, target: TargetConfig): ResolvedTarget {
  const d = config.defaults;
  return {
    name: target.name,
    paths: target.paths.map(normalizePath),
    resources: target.resources,
    mode: target.mode ?? d.mode,
    strategy: target.strategy ?? d.strategy,
    confirmations: target.confirmations ?? d.confirmations,
    stuckAfterMs: parseDuration(target.stuckAfter ?? d.stuckAfter)!,
    onFailure: resolveOnFailure({ ...d.onFailure, ...target.onFailure }),
    freeze: target.freeze ?? d.freeze,
    settle: target.settle ?? d.settle,
    maxAgeMs: offOrMs(target.maxAge ?? d.maxAge),
    cooldownMs: offOrMs(target.cooldown ?? d.cooldown) ?? 0,
    soakMs: parseDuration(target.soak ?? d.soak)!,
    freezeUntil: target.freezeUntil ?? d.freezeUntil,
    blastRadius: { allowEmpty: target.blastRadius?.allowEmpty ?? false, allowUntouchedFiles: target.blastRadius?.allowUntouchedFiles ?? false },
    allowRevertDuring: target.allowRevertDuring ?? [],
    ...(target.analysis ? { analysis: resolveAnalysis(target) } : {}),
  };
}

function resolveAnalysis(target: TargetConfig): ResolvedAnalysis {
  const { workload: _named, window, ...rest } = target.analysis!;
  const workload = analysisWorkload(target.analysis!, target.resources);
  if (typeof workload === 'string') throw new Error(workload); // refused by the schema already
  return { ...rest, workload, windowMs: parseDuration(window)! };
}

function offOrMs(value: string): number | undefined {
  return value === 'off' ? undefined : parseDuration(value)!;
}

/** "./apps//x/" → "apps/x/": one spelling per path so that path comparisons are exact. */
export function normalizePath(p: string): string {
  const folder = p.endsWith('/');
  const parts = p.split('/').filter((s) => s !== '' && s !== '.');
  return parts.join('/') + (folder ? '/' : '');
}

/** The JSON Schema published by `lastgood schema` and committed as templates/lastgood.schema.json. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return { ...schema, $id: 'https://lastgood.dev/schema/lastgood.schema.json', title: 'lastgood.yaml' };
}
