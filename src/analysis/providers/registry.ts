/**
 * Metric providers by name (the pattern of src/health/registry.ts and src/deliver/registry.ts):
 * a check names its provider, the registry builds it from lastgood.yaml's `analysis.<provider>`
 * settings. A provider lastgood does not evaluate is refused naming it, and where it came from.
 */
import { InputError } from '../../errors.ts';
import type { ProviderRef } from '../types.ts';
import { createPrometheus } from './prometheus/index.ts';
import type { MetricProvider, ProviderContext, ProviderSettings } from './types.ts';

type Factory = (address: string, settings: ProviderSettings, ctx: ProviderContext) => MetricProvider;

const PROVIDERS: Record<string, Factory> = {
  prometheus: createPrometheus,
};

/** Providers the upstream formats name (Argo Rollouts' MetricProvider fields, Flagger's provider types) that lastgood does not evaluate yet. */
export const OTHER_PROVIDERS = [
  'datadog', 'newRelic', 'cloudWatch', 'wavefront', 'kayenta', 'web', 'job', 'graphite', 'influxdb', 'skywalking', 'plugin',
  'newrelic', 'cloudwatch', 'stackdriver', 'dynatrace', 'keptn', 'splunk',
];

export function isSupportedProvider(name: string): boolean {
  return Object.hasOwn(PROVIDERS, name);
}

export function supportedProviders(): string[] {
  return Object.keys(PROVIDERS);
}

/** The refusal for a provider lastgood does not evaluate. */
export function unsupportedProvider(name: string, where: string): InputError {
  return new InputError(`${where}: provider "${name}" is not supported: lastgood evaluates ${supportedProviders().join(', ')} metrics (the provider seam in src/analysis/providers/ is where ${name} would go)`);
}

/**
 * One provider instance per provider and address (a target's checks share it). The address is
 * lastgood.yaml's `analysis.<provider>.address` when set (lastgood may reach the provider another
 * way than the cluster does), else the one the template names.
 */
export class Providers {
  private readonly made = new Map<string, MetricProvider>();
  private readonly settings: Record<string, ProviderSettings | undefined>;
  private readonly ctx: ProviderContext;
  constructor(settings: Record<string, ProviderSettings | undefined>, ctx: ProviderContext) {
    this.settings = settings;
    this.ctx = ctx;
  }

  get(ref: ProviderRef, where: string): MetricProvider {
    const factory = PROVIDERS[ref.name];
    if (!factory) throw unsupportedProvider(ref.name, where);
    const settings = this.settings[ref.name] ?? {};
    const address = settings.address ?? ref.address;
    if (!address) throw new InputError(`${where}: no ${ref.name} address: set analysis.${ref.name}.address in lastgood.yaml`);
    const timeoutMs = settings.timeoutMs ?? ref.timeoutMs;
    const key = `${ref.name}|${address}|${timeoutMs ?? ''}`;
    let provider = this.made.get(key);
    if (!provider) {
      provider = factory(address, { ...settings, ...(timeoutMs !== undefined ? { timeoutMs } : {}) }, this.ctx);
      this.made.set(key, provider);
    }
    return provider;
  }
}
