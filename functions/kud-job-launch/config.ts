import { z } from 'zod';
import { sweepIntervalEnv } from '../../shared/k8s/sweep.js';
import { envInt, envJson, envLabelMap, envList, envString } from '../../shared/config.js';
import { tolerationsSchema } from '../../shared/schemas/placement.js';
import {
  defaultActiveDeadlineSeconds,
  defaultKudImage,
  defaultSshKeySecret,
  type Placement,
} from '../../shared/core/kud-job.js';
import { functionsNamespaceEnv } from '../../shared/functions-namespace.js';

/** The image manifests/kustomization.yaml deploys kud-job-launch with. */
export const defaultKubeconfigPublisherImage = 'ghcr.io/bpa-functions/kud-job-launch:0.1.0';

/** kud-job-launch's env (docs/architecture.md, Config). */
export const kudJobLaunchConfigSchema = z.object({
  KUD_IMAGE: envString(defaultKudImage),
  KUD_ACTIVE_DEADLINE_SECONDS: envInt(defaultActiveDeadlineSeconds, { min: 1 }),
  /**
   * Where the KUD Job runs (contract section 13): the nodeSelector of its pod, `key=value,...`,
   * naming the node(s) with a route to the provisioning network. Empty: any node. Not in the
   * launch hash (shared/core/launch-hash.ts): it changes where KUD runs, not what it installs, so
   * a new value never reinstalls a cluster; it applies to the next Job launched.
   */
  KUD_NODE_SELECTOR: envLabelMap(),
  /**
   * The KUD pod's tolerations, a JSON list of core/v1 Tolerations, e.g. for a tainted
   * provisioning node `[{"key":"bpa.akraino.org/provisioning","operator":"Exists","effect":"NoSchedule"}]`.
   * The cleanup and publisher Jobs, pinned to the KUD pod's node, carry them too (a NoExecute
   * taint would evict them otherwise). Not in the launch hash either.
   */
  KUD_TOLERATIONS: envJson(tolerationsSchema, []),
  /** Secret with id_rsa / id_rsa.pub mounted into the KUD pod. */
  SSH_KEY_SECRET: envString(defaultSshKeySecret),
  /** Namespaces the sweep looks at (comma-separated); empty: all namespaces. */
  SWEEP_NAMESPACES: envList<string>([]),
  /** The least time between two sweeps of this instance, however many pings arrive (shared/k8s/sweep.ts). */
  SWEEP_INTERVAL_SECONDS: sweepIntervalEnv,
  /** Where `kud-installer` and the cluster-name claims live (shared/functions-namespace.ts). */
  FUNCTIONS_NAMESPACE: functionsNamespaceEnv,
  /** Image of the deletion cleanup Job: any image with a shell and rm (the project's own, `npm run images`). */
  CLEANUP_IMAGE: envString('ghcr.io/bpa-functions/cleanup:0.1.0'),
  /** How long a deletion waits for its cleanup before the finalizer goes anyway (Warning Event). */
  CLEANUP_TIMEOUT_SECONDS: envInt(600, { min: 1 }),
  /**
   * The functions' own image (this function's), whose kubeconfig publisher program copies KUD's
   * admin.conf into the `<cluster>-admin-kubeconfig` Secret (docs/adr/0009-kubeconfig-publisher.md).
   */
  KUBECONFIG_PUBLISHER_IMAGE: envString(defaultKubeconfigPublisherImage),
});
export type KudJobLaunchConfig = z.infer<typeof kudJobLaunchConfigSchema>;

/** Where the KUD Job and the Jobs pinned to its node may run (KUD_NODE_SELECTOR, KUD_TOLERATIONS). */
export const placementOf = (config: KudJobLaunchConfig): Placement => ({
  nodeSelector: config.KUD_NODE_SELECTOR,
  tolerations: config.KUD_TOLERATIONS,
});
