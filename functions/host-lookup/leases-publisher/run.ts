import { parseArgs } from 'node:util';
import { describeConfigIssues } from '../../../shared/config.js';
import { describeError } from '../../../shared/errors.js';
import { kubeClients, loadDefaultKubeConfig, type KubeClients } from '../../../shared/k8s/clients.js';
import type { Logger } from '../../../shared/log.js';
import { LeasesPublisher, leasesPublishInputSchema, type LeasesPublishInput } from './publish.js';

export const leasesPublishUsage = `Usage: leases-publisher --file <lease file> --configmap <namespace>/<name>/<key> [options]
       bpa leases publish --file <lease file> --configmap <namespace>/<name>/<key> [options]

Copies a DHCP server's lease file (dnsmasq's or ISC dhcpd's) into the ConfigMap host-lookup reads
with LEASES_SOURCE=configmap:<namespace>/<name>/<key>, by server-side apply, each time its content
changes; meant to run as a sidecar beside the DHCP server (docs/deploy.md "Leases on a real
cluster"). The ConfigMap must exist: the publisher only patches it. A file over 1 MiB (a
ConfigMap's limit) is not published; the last one stays.

Options:
  --file FILE            the lease file, e.g. /var/lib/dnsmasq/dnsmasq.leases
  --configmap NS/NAME/KEY  the ConfigMap and key to write
  --interval SECONDS     how often to look at the file (default: 2)
  --once                 publish once and exit (exit 1 if that failed)
  -h, --help             show this help

Credentials: KUBECONFIG, else ~/.kube/config, else the pod's ServiceAccount.
Exit status: 0 stopped by SIGTERM/SIGINT (or --once published); 1 --once failed; 2 bad options.`;

/** The command line, checked; throws a message for the usage error. */
export function parseLeasesPublishArgs(argv: string[]): LeasesPublishInput {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: 'string' },
      configmap: { type: 'string' },
      interval: { type: 'string' },
      once: { type: 'boolean' },
    },
    strict: true,
    allowPositionals: false,
  });
  const parsed = leasesPublishInputSchema.safeParse({ ...values, once: values.once ?? false });
  // Each issue names its flag: `configmap: must be <namespace>/<name>/<key>`.
  if (!parsed.success) throw new Error(describeConfigIssues(parsed.error).replace(/(^|; )(\w)/g, '$1--$2'));
  return parsed.data;
}

/**
 * Runs the publisher until `signal` aborts (or once, with --once); resolves to the exit code.
 * `clients` for tests; by default the KubeConfig of the environment.
 */
export async function runLeasesPublisher(
  input: LeasesPublishInput,
  log: Logger,
  signal: AbortSignal,
  clients: KubeClients = kubeClients(loadDefaultKubeConfig()),
): Promise<number> {
  const publisher = new LeasesPublisher(clients, input, log);
  if (!input.once) {
    log.info('watching the lease file', {
      file: input.file,
      configMap: `${input.configmap.namespace}/${input.configmap.name}`,
      key: input.configmap.key,
      intervalSeconds: input.interval,
    });
    await publisher.run(input.interval, signal);
    return 0;
  }
  try {
    const outcome = await publisher.publishOnce();
    return outcome === 'published' || outcome === 'unchanged' ? 0 : 1;
  } catch (error) {
    log.error('leases not published', describeError(error));
    return 1;
  }
}
