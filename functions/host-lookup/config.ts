import { z } from 'zod';
import { sweepIntervalEnv } from '../../shared/k8s/sweep.js';
import { envBoolean, envList, envOptionalString } from '../../shared/config.js';
import { describeError } from '../../shared/errors.js';
import { functionsNamespaceEnv } from '../../shared/functions-namespace.js';
import { parseLeasesSource } from './lease-source.js';

export const defaultBmhNamespace = 'metal3';

/**
 * `BMH_NAMESPACE`: absent → `metal3`; an empty value, set on purpose → every namespace
 * (undefined). Unlike other variables, empty is a choice here: searching every namespace lets
 * a tenant's BareMetalHost answer for another tenant's MAC (docs/security.md).
 */
const bmhNamespaceEnv = z
  .string()
  .optional()
  .transform((value) => (value === undefined ? defaultBmhNamespace : value.trim() || undefined));

/** host-lookup's env (docs/architecture.md, Config). */
export const hostLookupConfigSchema = z.object({
  /** Namespace of the BareMetalHosts; empty on purpose: all namespaces. */
  BMH_NAMESPACE: bmhNamespaceEnv,
  /**
   * Keep a watched index of the BareMetalHosts while warm (functions/host-lookup/host-watch.ts);
   * false: one list per invocation, as before.
   */
  BMH_WATCH: envBoolean(true),
  /**
   * Namespaces whose pods may be taken as Virtlet VMs (comma-separated). Empty: none, and a
   * `cluster-type: virtlet-vm` Provisioning is told so. Never every namespace: any tenant can
   * create a pod that looks like a VM.
   */
  VM_NAMESPACES: envList<string>([]),
  /** `/path/to/dhcpd.leases` or `configmap:<namespace>/<name>/<key>`; absent: no lease file. */
  LEASES_SOURCE: envOptionalString().superRefine((value, ctx) => {
    if (value === undefined) return;
    try {
      parseLeasesSource(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: describeError(error).message });
    }
  }),
  /** Bare-metal IP sources, in the order they are tried. */
  IP_SOURCES: envList(['leases', 'nics'], ['leases', 'nics']),
  /** Namespaces the sweep looks at (comma-separated); empty: all namespaces. */
  SWEEP_NAMESPACES: envList<string>([]),
  /** The least time between two sweeps of this instance, however many pings arrive (shared/k8s/sweep.ts). */
  SWEEP_INTERVAL_SECONDS: sweepIntervalEnv,
  /** Where the cluster-name claims live (shared/functions-namespace.ts). */
  FUNCTIONS_NAMESPACE: functionsNamespaceEnv,
});
export type HostLookupConfig = z.infer<typeof hostLookupConfigSchema>;
