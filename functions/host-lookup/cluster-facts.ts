import { bareMetalHostSchema, type BareMetalHost } from '../../shared/schemas/bare-metal-host.js';
import { podSchema, type Pod } from '../../shared/schemas/pod.js';
import { vmiSchema, type VirtualMachineInstance } from '../../shared/schemas/vmi.js';
import { indexHostsByMac, type HostMacEntry } from '../../shared/core/host-index.js';
import { judgeHostClaim, type ClaimOwner } from '../../shared/core/host-claim.js';
import type { LeaseIndex } from '../../shared/core/leases.js';
import { kubeClients, type KubeClients } from '../../shared/k8s/clients.js';
import { callApi } from '../../shared/k8s/api-errors.js';
import { bareMetalHostsResource, virtualMachineInstancesResource } from '../../shared/k8s/resources.js';
import { listCustomObjects } from '../../shared/k8s/custom-objects.js';
import { BpaError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import type { HostLookupConfig } from './config.js';
import { watchedHostIndex, type WatchedHostIndex } from './host-watch.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { loadLeases, parseLeasesSource } from './lease-source.js';

/** The facts of one invocation, with the warm instance's host index unless BMH_WATCH=false. */
export function clusterFactsFor(context: FunctionContext<HostLookupConfig>): ClusterFacts {
  const { config, kubeConfig, log } = context;
  return new ClusterFacts(
    kubeClients(kubeConfig),
    config,
    log,
    config.BMH_WATCH ? watchedHostIndex(kubeConfig, config.BMH_NAMESPACE, log) : undefined,
  );
}

/**
 * What the cluster knows about hosts, read lazily and at most once per invocation (the sweep
 * resolves many Provisionings from one read). Objects that fail their schema are skipped: a
 * broken host must not hide the others.
 */
export class ClusterFacts {
  private hosts?: Promise<BareMetalHost[]>;
  private pods?: Promise<Pod[]>;
  private vmis?: Promise<VirtualMachineInstance[]>;
  private leases?: Promise<LeaseIndex | undefined>;

  constructor(
    private readonly clients: KubeClients,
    private readonly config: HostLookupConfig,
    private readonly log: Logger,
    /** The warm instance's watched index (host-watch.ts); without it, one list per invocation. */
    private readonly hostIndex?: WatchedHostIndex,
  ) {}

  /** The BareMetalHosts that carry `macs` (boot MAC or an inspected NIC), by MAC. */
  async hostsByMac(macs: ReadonlySet<string>): Promise<Map<string, HostMacEntry>> {
    if (this.hostIndex) return this.hostIndex.hostsByMac(macs);
    return indexHostsByMac(await this.bareMetalHosts(), macs);
  }

  /** `<namespace>/<name>` of the BareMetalHosts whose consumerRef names `owner`. */
  async hostsClaimedBy(owner: ClaimOwner): Promise<string[]> {
    const fromIndex = this.hostIndex?.claimedBy(owner);
    if (fromIndex) return fromIndex;
    return (await this.bareMetalHosts()).flatMap((host) =>
      judgeHostClaim(host.spec?.consumerRef, owner).kind === 'mine'
        ? [host.metadata.namespace ? `${host.metadata.namespace}/${host.metadata.name}` : host.metadata.name]
        : [],
    );
  }

  /** A host this invocation wrote (claimed): the warm index takes its new version at once. */
  noteHostWritten(object: unknown, basedOn: string | undefined): void {
    this.hostIndex?.noteWritten(object, basedOn);
  }

  bareMetalHosts(): Promise<BareMetalHost[]> {
    this.hosts ??= listCustomObjects(this.clients, bareMetalHostsResource, {
      namespace: this.config.BMH_NAMESPACE,
    }).then((items) => keepValid(items, (item) => bareMetalHostSchema.safeParse(item)));
    return this.hosts;
  }

  /**
   * Running pods of the configured VM_NAMESPACES only: any tenant can create a pod that looks
   * like a Virtlet VM, so pods are never searched in every namespace (docs/security.md).
   */
  runningPods(): Promise<Pod[]> {
    const namespaces = this.config.VM_NAMESPACES;
    if (namespaces.length === 0) return Promise.reject(vmNamespacesNotConfigured('virtlet-vm'));
    this.pods ??= Promise.all(
      namespaces.map((namespace) =>
        callApi(`list running pods in namespace ${namespace}`, () =>
          this.clients.core.listNamespacedPod({ namespace, fieldSelector: 'status.phase=Running' }),
        ),
      ),
    ).then((lists) =>
      keepValid(
        lists.flatMap((list) => list.items),
        (item) => podSchema.safeParse(item),
      ),
    );
    return this.pods;
  }

  /**
   * The VirtualMachineInstances of the configured VM_NAMESPACES only, as the pods above (any
   * tenant who may create VMIs could fake a MAC): one list per namespace and invocation, like the
   * pods; only the Running ones count (shared/core/vmi-index.ts). A custom resource has no
   * status.phase field selector, so the phase is filtered here.
   */
  vmisOfVmNamespaces(): Promise<VirtualMachineInstance[]> {
    const namespaces = this.config.VM_NAMESPACES;
    if (namespaces.length === 0) return Promise.reject(vmNamespacesNotConfigured('kubevirt-vm'));
    this.vmis ??= Promise.all(
      namespaces.map((namespace) =>
        listCustomObjects(this.clients, virtualMachineInstancesResource, { namespace }),
      ),
    ).then((lists) => keepValid(lists.flat(), (item) => vmiSchema.safeParse(item)));
    return this.vmis;
  }

  dhcpLeases(): Promise<LeaseIndex | undefined> {
    const source = this.config.LEASES_SOURCE ? parseLeasesSource(this.config.LEASES_SOURCE) : undefined;
    this.leases ??= loadLeases(this.clients, source, this.log);
    return this.leases;
  }
}

const vmNamespacesNotConfigured = (clusterType: 'virtlet-vm' | 'kubevirt-vm') =>
  new BpaError(
    'VmNamespacesNotConfigured',
    clusterType === 'virtlet-vm'
      ? 'cluster-type virtlet-vm needs VM_NAMESPACES: the namespaces whose Running pods may be taken as Virtlet VMs (none is configured)'
      : 'cluster-type kubevirt-vm needs VM_NAMESPACES: the namespaces whose Running VirtualMachineInstances may be taken as nodes (none is configured)',
  );

function keepValid<T>(
  items: readonly unknown[],
  parse: (item: unknown) => { success: boolean; data?: T },
): T[] {
  return items.flatMap((item) => {
    const parsed = parse(item);
    return parsed.success ? [parsed.data as T] : [];
  });
}
