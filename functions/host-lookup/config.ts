import { z } from 'zod';
import { envList, envOptionalString } from '../../shared/config.js';
import { parseLeasesSource } from './lease-source.js';
import { describeError } from '../../shared/errors.js';

/** host-lookup's env (docs/architecture.md, Config). */
export const hostLookupConfigSchema = z.object({
  /** Namespace of the BareMetalHosts; absent: all namespaces. */
  BMH_NAMESPACE: envOptionalString(),
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
});
export type HostLookupConfig = z.infer<typeof hostLookupConfigSchema>;
