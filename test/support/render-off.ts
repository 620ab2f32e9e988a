/**
 * `render: { kustomize: off }` for the scenarios of revert-scenario.ts and forge-scenario.ts unless
 * a test asks for the render: they test the write path and the hosts' APIs. The render (`kubectl
 * kustomize` of three revisions) is over half of a small run's CPU; it is tested in
 * render-*.test.ts and model-property.test.ts, and with these scenarios once per host and once
 * per kind of local repository.
 */
export const RENDER = (render = false) => (render ? '' : 'render: { kustomize: "off" }\n');
