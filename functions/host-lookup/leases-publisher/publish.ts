import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions, type V1ConfigMap } from '@kubernetes/client-node';
import { z } from 'zod';
import { describeError } from '../../../shared/errors.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { callApi } from '../../../shared/k8s/api-errors.js';
import type { Logger } from '../../../shared/log.js';
import { parseLeasesSource } from '../lease-source.js';

/**
 * The lease publisher (docs/deploy.md "Leases on a real cluster"): a sidecar beside the DHCP
 * server (Metal3's dnsmasq in the Ironic pod) that copies its lease file into the ConfigMap
 * host-lookup reads with `LEASES_SOURCE=configmap:<ns>/<name>/<key>`. It runs host-lookup's own
 * image (`node dist/bundle/leases-publisher.mjs`) and `bpa leases publish` runs the same code.
 * Its ServiceAccount may only patch that one ConfigMap (manifests/components/leases-publisher).
 */

/** Field manager of the server-side apply: the publisher owns the one key it writes. */
export const leasesPublisherFieldManager = 'bpa-leases-publisher';

/**
 * The API server refuses a ConfigMap whose data (keys and values) exceed 1 MiB (core/v1
 * validation, MaxConfigMapSize); a larger file is not published, and the last one stays.
 */
export const configMapMaxBytes = 1024 * 1024;

/** What the publisher is told: its command line, field for flag (`--file`, `--configmap`, ...). */
export const leasesPublishInputSchema = z.object({
  file: z
    .string({ error: 'required (the lease file)' })
    .startsWith('/', 'must be an absolute path (the lease file)'),
  /** `<namespace>/<name>/<key>` (LEASES_SOURCE without `configmap:`). */
  configmap: z.string({ error: 'required (<namespace>/<name>/<key>)' }).transform((text, ctx) => {
    try {
      const source = parseLeasesSource(`configmap:${text}`);
      if (source.kind === 'configmap') return source;
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'must be <namespace>/<name>/<key>' });
    return z.NEVER;
  }),
  /** How often the file is looked at: dnsmasq rewrites it in place on every lease change. */
  interval: z.coerce.number().positive().max(3600).default(2),
  /** Publish once and end (a Job, a test); otherwise watch until SIGTERM. */
  once: z.boolean().default(false),
});
export type LeasesPublishInput = z.infer<typeof leasesPublishInputSchema>;
export type LeasesTarget = LeasesPublishInput['configmap'];

export type PublishOutcome = 'published' | 'unchanged' | 'missing' | 'too-large';

/** The ConfigMap as applied: only the one key (other keys, labels, owners are someone else's). */
export function leasesConfigMap(target: LeasesTarget, text: string): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: target.name, namespace: target.namespace },
    data: { [target.key]: text },
  };
}

const applyPatch = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/**
 * Publishes a lease file's content into its ConfigMap by server-side apply, when it differs from
 * what this publisher last published (`last`; undefined after a start: one apply, which the API
 * server stores as a no-op when nothing changed). Never creates the ConfigMap's other parts.
 */
export class LeasesPublisher {
  private last: string | undefined;
  private reported: PublishOutcome | undefined;

  constructor(
    private readonly clients: KubeClients,
    private readonly input: Pick<LeasesPublishInput, 'file' | 'configmap'>,
    private readonly log: Logger,
  ) {}

  /** One look at the file: publish it if it changed. API errors throw (the loop logs and retries). */
  async publishOnce(): Promise<PublishOutcome> {
    const { file, configmap: target } = this.input;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // dnsmasq writes the file at its first lease: nothing to publish yet.
      return this.report('missing', 'no lease file yet', { file });
    }
    if (text === this.last) return 'unchanged';
    const bytes = Buffer.byteLength(text, 'utf8') + Buffer.byteLength(target.key, 'utf8');
    if (bytes > configMapMaxBytes)
      return this.report('too-large', 'lease file too large for a ConfigMap; the last one stays', {
        reason: 'LeasesTooLarge',
        file,
        bytes,
        limit: configMapMaxBytes,
      });
    await callApi(`apply ConfigMap ${target.namespace}/${target.name}`, () =>
      this.clients.core.patchNamespacedConfigMap(
        {
          name: target.name,
          namespace: target.namespace,
          body: leasesConfigMap(target, text),
          fieldManager: leasesPublisherFieldManager,
          force: true,
        },
        applyPatch,
      ),
    );
    this.last = text;
    this.reported = undefined;
    this.log.info('leases published', {
      configMap: `${target.namespace}/${target.name}`,
      key: target.key,
      bytes,
    });
    return 'published';
  }

  /** Polls every `intervalSeconds` until `signal` aborts; a failed look is logged and retried. */
  async run(intervalSeconds: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.publishOnce();
      } catch (error) {
        const { reason, message } = describeError(error);
        this.log.warn('leases not published; retrying', { reason, message });
      }
      await sleep(intervalSeconds * 1000, undefined, { signal }).catch(() => undefined);
    }
  }

  /** Logs a lasting state once, not on every look. */
  private report(outcome: PublishOutcome, message: string, fields: Record<string, unknown>): PublishOutcome {
    if (this.reported !== outcome)
      (outcome === 'too-large' ? this.log.error : this.log.info)(message, fields);
    this.reported = outcome;
    return outcome;
  }
}
