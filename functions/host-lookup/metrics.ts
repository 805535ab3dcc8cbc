import { counterSpec } from '../../shared/telemetry/metrics.js';

/** Nodes whose IP was found, by where it came from (dhcp-leases, host-nics, virtlet-pod, kubevirt-vmi). */
export const nodesResolved = counterSpec({
  name: 'bpa_nodes_resolved_total',
  help: 'Nodes resolved to an IP address, by IP source',
  labelNames: ['source'],
});

export const hostLookupMetrics = [nodesResolved];
