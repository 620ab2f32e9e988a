/**
 * `render: { kustomize: off }` for the scenarios whose tests are about something else (the write
 * path, the hosts' APIs, the controller's timing, metric analysis, the audit log, the Action's
 * and the CLI's inputs, failure policies), unless a test asks for the render. The render
 * (`kubectl kustomize` of three revisions) is over half of a small run's CPU; it is tested in
 * render-*.test.ts, model-property.test.ts, run.test.ts and history-shapes.test.ts, and through
 * these scenarios once per host, per kind of repository, per controller backend and in the Action.
 */
export const RENDER = (render = false) => (render ? '' : 'render: { kustomize: "off" }\n');
