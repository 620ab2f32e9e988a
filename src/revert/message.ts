import type { Evidence, Verdict } from '../decide/types.ts';
import type { NextSteps } from '../decide/next-steps.ts';
import type { Located } from '../history/locate.ts';
import type { CommitInfo } from '../repo/types.ts';
import { loadTemplate, render } from './template.ts';
import { scrubText } from '../scrub.ts';
import { codeSpan, diffStatBlock, PORTABLE_MARKDOWN, timeText, type MarkdownDialect } from './markup.ts';

export interface MessageInput {
  target: string;
  paths: string[];
  strategy: 'revert' | 'restore';
  verdict: Verdict;
  located: Located;
  /** lines saying what was frozen (image automation suspended, tags ignored) */
  frozen?: string[];
  /** what a person should know about how the change was made (a fallback to restore, a freeze edit left out) */
  notes?: string[];
  rejected?: string[];
  /** a person's reason (lastgood revert --reason) */
  reason?: string;
  /** a person asked for this revert: the texts say so, and claim no cluster state where none was read */
  byPerson?: { reason?: string; clusterRead: boolean };
  now: Date;
  /** how the plan was checked against what the engine builds, and the rendered diff where a renderer ran */
  checked?: { summary: string; rendered?: { summary: string; markdown: string }; notRendered?: string };
  /** what happens after the merge, and about how long it takes (decide/next-steps.ts); the pull request's body says it */
  next?: NextSteps;
}

const short = (sha: string) => sha.slice(0, 12);
const subjectLine = (c: CommitInfo) => c.message.split('\n')[0]!.trim();

/** What the last-known-good is, in words: verified, the applied revision, or the commit before the first bad one. */
export function lkgPhrase(located: Pick<Located, 'verified' | 'lastKnownGood' | 'applied'>): string {
  if (located.verified) return 'verified: observed healthy';
  if (located.applied && located.applied === located.lastKnownGood) return 'unverified: the revision the GitOps engine last applied';
  return 'unverified: the commit before the first bad one';
}

export function evidenceLine(e: Evidence): string {
  return `${e.groupKind} ${e.namespace ? `${e.namespace}/` : ''}${e.name} state=${e.state} reason=${e.reason}`;
}

/** The trailers of DESIGN.md, always present, in git interpret-trailers form. */
export function trailers(input: Pick<MessageInput, 'target' | 'verdict' | 'located'>): string {
  const lines = [
    `Lastgood-Target: ${input.target}`,
    `Lastgood-Reverts: ${input.located.bad.map((c) => c.oid).join(',')}`,
    `Lastgood-Restores: ${input.located.lastKnownGood}`,
    ...input.verdict.evidence.filter((e) => e.state !== 'healthy').map((e) => `Lastgood-Evidence: ${evidenceLine(e)}`),
  ];
  if (!lines.some((l) => l.startsWith('Lastgood-Evidence'))) lines.push(...input.verdict.evidence.map((e) => `Lastgood-Evidence: ${evidenceLine(e)}`));
  return lines.map(oneLine).join('\n');
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ');
}

function verdictPhrase(v: Verdict): string {
  return v.verdict === 'stuck' ? 'is stuck' : v.verdict === 'failed' ? `failed (${v.class ?? 'analysis'})` : `is ${v.verdict}`;
}

function evidenceBullets(evidence: Evidence[]): string {
  return evidence
    .map((e) => `- ${e.groupKind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}: ${e.state} (${e.reason})${e.since ? ` since ${e.since}` : ''}${e.message ? `: ${oneLine(e.message)}` : ''}`)
    .join('\n');
}

/** Why the revert, in the subject's parentheses: a person's request, or the failing object. */
function titleWhy(input: MessageInput): string {
  if (input.byPerson) return `by hand${input.byPerson.reason ? `: ${input.byPerson.reason.slice(0, 100)}` : ''}`;
  const first = input.verdict.evidence.find((e) => e.state === 'failed') ?? input.verdict.evidence.find((e) => e.state !== 'healthy');
  return first ? `${first.kind} ${first.namespace ? `${first.namespace}/` : ''}${first.name} ${first.reason}` : input.verdict.verdict;
}

export function commitMessage(input: MessageInput): string {
  const { located, verdict } = input;
  const why = titleWhy(input);
  const person = input.byPerson;
  const later = located.later.length
    ? input.strategy === 'restore'
      ? `Also undone by this restore (later commits to the same paths):\n${located.later.map((c) => `- ${c.oid} ${subjectLine(c)}`).join('\n')}\n`
      : `Kept (later commits to the same paths, not reverted):\n${located.later.map((c) => `- ${c.oid} ${subjectLine(c)}`).join('\n')}\n`
    : '';
  const frozen = [
    ...(input.notes?.length ? [`Notes:\n${input.notes.map((f) => `- ${f}`).join('\n')}`] : []),
    ...(input.frozen?.length ? [`Frozen:\n${input.frozen.map((f) => `- ${f}`).join('\n')}`] : []),
    ...(input.rejected?.length ? [`Rejected versions:\n${input.rejected.map((r) => `- ${r}`).join('\n')}`] : []),
    ...(input.reason ? [`Reason given: ${input.reason}`] : []),
  ].join('\n\n');
  // evidence was scrubbed where it entered; a person's --reason was not: scrub again (git history is forever)
  return scrubText(render(loadTemplate('commit-message.md'), {
    subject: oneLine(`lastgood: ${input.strategy} ${input.target} to ${short(located.lastKnownGood)} (${why})`).slice(0, 120),
    verb: input.strategy === 'restore' ? 'restored' : 'reverted the bad commits of',
    target: input.target,
    paths: input.paths.join(', '),
    because: person
      ? `a person asked for it${person.reason ? ` (reason: ${oneLine(person.reason)})` : ''}${person.clusterRead ? `; the cluster, as lastgood read it: it ${verdictPhrase(verdict)}` : '; lastgood did not read the cluster for it'}`
      : `it ${verdictPhrase(verdict)}`,
    lastKnownGood: located.lastKnownGood,
    verified: lkgPhrase(located),
    explanation: located.explanation,
    checked: input.checked ? `\nChecked: ${oneLine(input.checked.summary)}.${input.checked.rendered ? `\nRendered: ${oneLine(input.checked.rendered.summary)}.` : ''}` : '',
    evidence: person && !person.clusterRead ? '- none read: a revert by hand (lastgood did not read the cluster)' : evidenceBullets(verdict.evidence),
    badCommits: located.bad.map((c) => `- ${c.oid} ${subjectLine(c)}`).join('\n'),
    later,
    frozen,
    trailers: trailers(input),
  }), { maxBytes: 64 * 1024 });
}

export interface PullRequestInput extends MessageInput {
  /** link to a commit on the host, e.g. https://github.com/o/r/commit/<sha> */
  commitUrl?: (sha: string) => string;
  diffStat: string;
  /** the host's Markdown (its backend's `markdown`); default: what renders the same on every host */
  markdown?: MarkdownDialect;
}

/**
 * The pull/merge request's title and body (templates/pull-request.md). Everything from the
 * repository or the cluster — target and object names, paths, commit subjects, status messages,
 * image references, file names in the diffstat, what lastgood says about them — is quoted as code
 * (markup.ts): it shows as written and makes no link, image, mention, reference, HTML or
 * hidden marker on any host.
 */
export function pullRequestText(input: PullRequestInput): { title: string; body: string } {
  const { located, verdict } = input;
  const dialect = input.markdown ?? PORTABLE_MARKDOWN;
  const person = input.byPerson;
  const code = (s: string) => codeSpan(s);
  const cell = (s: string) => (s ? codeSpan(s, dialect) : '');
  const link = (sha: string) => (input.commitUrl ? `[${code(short(sha))}](${input.commitUrl(sha)})` : code(short(sha)));
  const commits = (cs: CommitInfo[]) => cs.map((c) => `- ${link(c.oid)} ${code(subjectLine(c))}`).join('\n');
  const frozenLines = [...(input.frozen ?? []).map((f) => `- frozen: ${code(f)}`), ...(input.rejected ?? []).map((r) => `- rejected version: ${code(r)}`)];
  const noteLines = (input.notes ?? []).map((n) => `- ${code(n)}`);
  const evidenceRows = verdict.evidence
    .map((e) => `| ${cell(`${e.groupKind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`)} | ${e.state} | ${cell(e.reason)} | ${timeText(e.since, dialect)} | ${cell(e.message.slice(0, 300))} |`)
    .join('\n');
  const footer = `Opened by lastgood at ${input.now.toISOString()}. Merging this PR is the rollback; closing it leaves the cluster as it is.`;
  const body = render(loadTemplate('pull-request.md'), {
    verb: input.strategy === 'restore' ? 'restore' : 'revert',
    verbPresent: input.strategy === 'restore' ? 'restores' : 'reverts the bad commits in',
    target: code(input.target),
    summary: person ? `Reverted by hand${person.reason ? `: ${code(person.reason)}` : ' (no reason given)'}` : code(verdict.summary),
    why: person
      ? `A person asked for this revert${person.reason ? `, saying ${code(person.reason)}` : ' (no reason given)'}${person.clusterRead ? `; the cluster, as lastgood read it, reports that ${code(input.target)} ${verdictPhrase(verdict)}` : '; lastgood did not read the cluster for it, and claims nothing about it'}.`
      : `The cluster reports that ${code(input.target)} ${verdictPhrase(verdict)}.`,
    evidence: person && !person.clusterRead
      ? '_Not read: a revert by hand names its commits; lastgood read no cluster state for it._'
      : `| object | state | reason | since | message |\n|---|---|---|---|---|\n${evidenceRows}`,
    paths: input.paths.map(code).join(', '),
    frozenNote: frozenLines.length ? ', except the image-automation freeze listed below' : '',
    badCommits: commits(located.bad),
    later: located.later.length ? `${input.strategy === 'restore' ? 'Also undone by this restore' : 'Kept (later commits to the same paths)'}:\n\n${commits(located.later)}` : '',
    lastKnownGoodLink: link(located.lastKnownGood),
    verified: located.verified ? '**verified**: observed healthy by lastgood' : `**unverified**: ${lkgPhrase(located).replace(/^unverified: /, '')}`,
    explanation: code(located.explanation),
    checked: input.checked
      ? `\n### What changes in the cluster\n\n${code(input.checked.summary)}.${input.checked.rendered ? `\n\n${input.checked.rendered.markdown}` : `\n\n_Not rendered (${code(input.checked.notRendered ?? 'no kustomize was available')}); the model of what the engine reads checked it._`}\n`
      : '',
    next: input.next?.steps.length
      ? `### After merge\n\n${input.next.steps.map((s) => `- ${s.pieces.map((p) => (typeof p === 'string' ? p : code(p.quoted))).join('')}`).join('\n')}${input.next.summary ? `\n\n${input.next.summary}` : ''}`
      : '',
    diffStat: diffStatBlock(input.diffStat),
    frozen: [noteLines.length ? `### Notes\n\n${noteLines.join('\n')}` : '', frozenLines.length ? `### Frozen\n\n${frozenLines.join('\n')}` : ''].filter(Boolean).join('\n\n'),
    // small print where the host renders HTML; Bitbucket would show the tags
    footer: dialect.html ? `<sub>${footer}</sub>` : `_${footer}_`,
  });
  const title = oneLine(`lastgood: ${input.strategy} ${input.target} to ${short(located.lastKnownGood)} (${person ? titleWhy(input) : `${verdict.verdict}${verdict.class && verdict.class !== 'stuck' ? `, ${verdict.class}` : ''}`})`);
  return { title: scrubText(title, { maxBytes: 256 }), body: scrubText(body, { maxBytes: 60_000 }) };
}
