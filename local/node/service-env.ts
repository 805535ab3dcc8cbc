import type { ServiceView } from './service-view.js';

/**
 * The variables the kubelet puts into every container: KUBERNETES_SERVICE_HOST/PORT (the
 * `kubernetes` Service) and, unless enableServiceLinks is false, the Docker-link style variables
 * of each Service in the pod's namespace (WEB_SERVICE_HOST, WEB_PORT_80_TCP...).
 */
function linkVariables(
  prefix: string,
  ip: string,
  ports: { port: number; name?: string }[],
): Record<string, string> {
  const env: Record<string, string> = {};
  const first = ports[0];
  if (!first) return env;
  env[`${prefix}_SERVICE_HOST`] = ip;
  env[`${prefix}_SERVICE_PORT`] = String(first.port);
  env[`${prefix}_PORT`] = `tcp://${ip}:${first.port}`;
  for (const port of ports) {
    if (port.name)
      env[`${prefix}_SERVICE_PORT_${port.name.toUpperCase().replace(/-/g, '_')}`] = String(port.port);
    const base = `${prefix}_PORT_${port.port}_TCP`;
    env[base] = `tcp://${ip}:${port.port}`;
    env[`${base}_PROTO`] = 'tcp';
    env[`${base}_PORT`] = String(port.port);
    env[`${base}_ADDR`] = ip;
  }
  return env;
}

/** The first address of a /N range: the `kubernetes` Service's ClusterIP. */
export const firstServiceAddress = (range: string) => {
  const [network = '10.0.0.0'] = range.split('/');
  const octets = network.split('.').map(Number);
  octets[3] = (octets[3] ?? 0) + 1;
  return octets.join('.');
};

export function serviceEnvironment(
  views: ServiceView[],
  namespace: string,
  serviceLinks: boolean,
  serviceClusterIpRange: string,
): Record<string, string> {
  const kubernetes = views.find((view) => view.namespace === 'default' && view.name === 'kubernetes');
  const env: Record<string, string> = {};
  if (serviceLinks) {
    for (const view of views) {
      if (view.namespace !== namespace || !view.clusterIP) continue;
      Object.assign(
        env,
        linkVariables(view.name.toUpperCase().replace(/-/g, '_'), view.clusterIP, view.ports),
      );
    }
  }
  const ip = kubernetes?.clusterIP ?? firstServiceAddress(serviceClusterIpRange);
  Object.assign(env, linkVariables('KUBERNETES', ip, [{ port: 443, name: 'https' }]));
  return env;
}
