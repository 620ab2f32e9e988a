/**
 * `render: { kustomize: off }` for the scenarios whose tests are about something else (the write
 * path, the hosts' APIs, the controller's timing, metric analysis, the audit log), unless a test
 * asks for the render. The render (`kubectl kustomize` of three revisions) is over half of a small
 * run's CPU; it is tested in render-*.test.ts and model-property.test.ts, and through these
 * scenarios once per host, per kind of repository and per controller backend.
 */
export const RENDER = (render = false) => (render ? '' : 'render: { kustomize: "off" }\n');
