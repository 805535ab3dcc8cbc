import type { KubeConfig, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { CoreV1Api, DiscoveryV1Api, makeInformer } from '@kubernetes/client-node';
import type { Informer, ObjectCache } from '@kubernetes/client-node';

/** A TCP endpoint a Service port leads to. */
export interface ServiceBackend {
  ip: string;
  port: number;
}

export interface ServicePortView {
  port: number;
  name?: string;
  backends: ServiceBackend[];
}

/** What DNS and the proxy need to know of one Service. */
export interface ServiceView {
  namespace: string;
  name: string;
  type: string;
  /** undefined for headless Services ("None") and ExternalName */
  clusterIP?: string;
  externalName?: string;
  ports: ServicePortView[];
  /** Ready endpoint addresses (any port): the A records of a headless Service. */
  readyAddresses: string[];
}

/**
 * Services and their EndpointSlices, watched in every namespace (kube-proxy's and CoreDNS's
 * view). Only ready endpoints count (EndpointSlice conditions.ready, as kube-proxy does).
 */
export class ServiceWatch {
  private readonly services: Informer<V1Service> & ObjectCache<V1Service>;
  private readonly slices: Informer<V1EndpointSlice> & ObjectCache<V1EndpointSlice>;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    kubeConfig: KubeConfig,
    private readonly onChange: (views: ServiceView[]) => void,
    private readonly onError: (error: unknown) => void,
  ) {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const discovery = kubeConfig.makeApiClient(DiscoveryV1Api);
    this.services = makeInformer(kubeConfig, '/api/v1/services', () => core.listServiceForAllNamespaces());
    this.slices = makeInformer(kubeConfig, '/apis/discovery.k8s.io/v1/endpointslices', () =>
      discovery.listEndpointSliceForAllNamespaces(),
    );
    for (const informer of [this.services, this.slices] as Informer<V1Service | V1EndpointSlice>[]) {
      for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, () => this.schedule());
      informer.on('error', (error) => {
        if (this.stopped) return;
        this.onError(error);
        // The informer stops on error: start it again a little later.
        setTimeout(() => {
          if (!this.stopped) void informer.start().catch(this.onError);
        }, 1000).unref();
      });
    }
  }

  async start(): Promise<void> {
    await Promise.all([this.services.start(), this.slices.start()]);
    this.emit();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([this.services.stop(), this.slices.stop()]);
  }

  views(): ServiceView[] {
    const slicesByService = new Map<string, V1EndpointSlice[]>();
    for (const slice of this.slices.list()) {
      const service = slice.metadata?.labels?.['kubernetes.io/service-name'];
      if (!service || slice.addressType !== 'IPv4') continue;
      const key = `${slice.metadata?.namespace}/${service}`;
      slicesByService.set(key, [...(slicesByService.get(key) ?? []), slice]);
    }
    return this.services.list().map((service) => {
      const namespace = service.metadata?.namespace ?? '';
      const name = service.metadata?.name ?? '';
      const slices = slicesByService.get(`${namespace}/${name}`) ?? [];
      const ready = slices.flatMap((slice) =>
        (slice.endpoints ?? [])
          .filter((endpoint) => endpoint.conditions?.ready !== false)
          .map((endpoint) => ({ endpoint, slice })),
      );
      const clusterIP = service.spec?.clusterIP;
      return {
        namespace,
        name,
        type: service.spec?.type ?? 'ClusterIP',
        clusterIP: clusterIP && clusterIP !== 'None' ? clusterIP : undefined,
        externalName: service.spec?.externalName,
        ports: (service.spec?.ports ?? [])
          .filter((port) => (port.protocol ?? 'TCP') === 'TCP')
          .map((port) => ({
            port: port.port,
            name: port.name,
            backends: ready.flatMap(({ endpoint, slice }) => {
              const slicePort = (slice.ports ?? []).find(
                (candidate) => (candidate.name ?? '') === (port.name ?? ''),
              );
              return slicePort?.port
                ? endpoint.addresses.map((ip) => ({ ip, port: slicePort.port as number }))
                : [];
            }),
          })),
        readyAddresses: [...new Set(ready.flatMap(({ endpoint }) => endpoint.addresses))],
      };
    });
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.emit();
    }, 50);
  }

  private emit(): void {
    if (!this.stopped) this.onChange(this.views());
  }
}
