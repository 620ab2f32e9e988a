import { VERSION } from './version.ts';
import { rendererFor } from './verify/render-check.ts';

/**
 * `lastgood version`: what this lastgood is and what it runs with, for a bug report or a check of
 * an image. The renderer is found as the engine finds it for a revert (rendererFor: the config's
 * `render.kustomize`, else kustomize, else `kubectl kustomize` on the PATH), so what is printed is
 * what the render check would use in the same environment: in the controller's image, its kustomize.
 */
export interface VersionInfo {
  lastgood: string;
  /** process.version, "v24.11.0" */
  node: string;
  render:
    | { available: true; renderer: 'kustomize' | 'kubectl kustomize'; kustomize: string; path: string }
    | { available: false; reason: string };
}

export async function versionInfo(setting: string | undefined): Promise<VersionInfo> {
  const r = await rendererFor(setting);
  const render: VersionInfo['render'] = 'unavailable' in r
    ? { available: false, reason: r.unavailable }
    : { available: true, renderer: r.kind === 'kubectl' ? 'kubectl kustomize' : 'kustomize', kustomize: r.version, path: r.command[0]! };
  return { lastgood: VERSION, node: process.version, render };
}

export function formatVersionInfo(info: VersionInfo): string {
  const render = info.render.available
    ? `${info.render.renderer} ${info.render.kustomize} (${info.render.path})`
    : `not available: ${info.render.reason}; the render check is skipped and says so`;
  return `lastgood ${info.lastgood}\nnode ${info.node}\nrender: ${render}\n`;
}
