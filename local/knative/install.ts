/**
 * Installs REAL Knative Eventing (knative.dev/eventing, built from its Go modules by
 * engines/build.sh knative) from its own config/ YAML: its CRDs, controller, webhook, MT channel
 * broker, in-memory channel and sources, nothing of ours in their place. On the node
 * (local/knative/real-node.ts) each `ko://` image is resolved to the image built from that
 * binary, by digest.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { KubernetesObjectApi } from '@kubernetes/client-node';
import { installCrds } from '../control-plane/crds.js';
import { knativeVersions } from './binaries.js';
import { eventingConfigObjects } from './eventing-config.js';
import { createMissing, waitForAdmission, waitForWorkloads } from './install-steps.js';
import { resolveKoImages } from './ko-images.js';

/** Knative Eventing's own namespace (config/core/100-namespace.yaml). */
export const knativeNamespace = 'knative-eventing';

export interface KnativeInstallOptions {
  kubeConfig: KubeConfig;
  /** Progress lines. */
  log?: (line: string) => void;
  /** How long the components get to become ready. Default 5 minutes (a loaded 2-core machine). */
  timeoutMs?: number;
  /**
   * Keys set in Eventing's `config-features` ConfigMap as it is created (e.g.
   * `authentication-oidc: enabled`). Default: none, config/'s own values. An install that finds
   * the ConfigMap already there leaves it as it is.
   */
  features?: Record<string, string>;
  /**
   * Keys set in Eventing's `config-observability` ConfigMap as it is created (`metrics-protocol:
   * prometheus`: broker-filter and broker-ingress serve /metrics on port 9092, the other components on 9090; Eventing's default is
   * `none`). Default: none, config/'s own values.
   */
  observability?: Record<string, string>;
  /**
   * `ko://<import path>` -> image by digest (`buildKnativeImages().koImages`, the node's imported
   * images): config/'s `ko://` references resolved to them, as `ko resolve` would.
   */
  images: Record<string, string>;
}

export interface KnativeInstall {
  version: string;
  /** Objects of config/ created now (0 when it was installed already). */
  created: number;
  /** The Deployments and StatefulSets of knative-eventing, all ready. */
  workloads: string[];
  readyAfterMs: number;
}

const quiet = () => undefined;

/** config/ with `keys` set in its ConfigMap `name` (a copy; the others unchanged). */
function withConfigKeys(
  objects: KubernetesObject[],
  name: string,
  keys: Record<string, string>,
): KubernetesObject[] {
  if (Object.keys(keys).length === 0) return objects;
  return objects.map((object) => {
    const isTarget =
      object.kind === 'ConfigMap' &&
      object.metadata?.name === name &&
      object.metadata.namespace === knativeNamespace;
    if (!isTarget) return object;
    const { data } = object as KubernetesObject & { data?: Record<string, string> };
    return { ...object, data: { ...data, ...keys } } as KubernetesObject;
  });
}

/**
 * Installs Knative Eventing from its module's own config/ (core, in-memory channel, MT channel
 * broker), as `kubectl apply -f` of a release would, and waits until every component is ready
 * and its webhook admits objects. Runs on a cluster whose node holds Knative's images, `images`
 * (installKnativeOnRealNode, real-node.ts, imports them first).
 */
export async function installKnativeEventing(options: KnativeInstallOptions): Promise<KnativeInstall> {
  const log = options.log ?? quiet;
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 300_000;
  const version = knativeVersions().eventing;
  const configured = withConfigKeys(
    withConfigKeys(eventingConfigObjects(version), 'config-features', options.features ?? {}),
    'config-observability',
    options.observability ?? {},
  );
  const resolved = resolveKoImages(configured, options.images);
  const objects = resolved.objects;
  if (resolved.unresolved.length > 0)
    log(`knative: no image for ${resolved.unresolved.join(', ')} (an env value; left as it is)`);
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const rest = objects.filter((o) => o.kind !== 'CustomResourceDefinition');
  log(
    `knative: installing Eventing ${version} from its config/ (${objects.length} objects, ${crds.length} CRDs)`,
  );
  // CRDs first (replaced: the test cluster may hold other versions of them), served before use.
  await installCrds(options.kubeConfig, crds, { timeoutMs });
  const created = await createMissing(options.kubeConfig, rest);
  const deployed = rest.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
  log(`knative: waiting for ${deployed.map((o) => o.metadata?.name ?? '').join(', ')}`);
  const workloads = await waitForWorkloads(options.kubeConfig, deployed, timeoutMs);
  const client = KubernetesObjectApi.makeApiClient(options.kubeConfig);
  await waitForAdmission(
    options.kubeConfig,
    rest,
    () =>
      client.create(
        {
          apiVersion: 'eventing.knative.dev/v1',
          kind: 'Broker',
          metadata: { name: 'install-check', namespace: knativeNamespace },
          spec: {},
        } as KubernetesObject,
        undefined,
        'All',
      ),
    { what: 'the Knative Eventing webhook to admit a Broker', timeoutMs },
  );
  const readyAfterMs = Date.now() - started;
  log(`knative: Eventing ${version} ready in ${(readyAfterMs / 1000).toFixed(1)} s`);
  return { version, created, workloads, readyAfterMs };
}
