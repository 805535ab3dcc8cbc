/**
 * A client configuration that authenticates as a ServiceAccount, the way a pod's projected
 * token does: a bound token from the TokenRequest API, the test server and its CA.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';

/** A fresh token of `namespace/serviceAccount` (TokenRequest), valid for `seconds`. */
export async function serviceAccountToken(
  admin: KubeConfig,
  namespace: string,
  serviceAccount: string,
  seconds = 3600,
): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name: serviceAccount,
    namespace,
    // No audiences: the API server's own, as for a pod's projected token.
    body: { spec: { audiences: [], expirationSeconds: seconds } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${serviceAccount} returned no token`);
  return token;
}

/**
 * Loads `target` (a KubeConfig or a subclass of it) with the admin configuration's server and
 * CA and a bearer token of the ServiceAccount, and returns it.
 */
export async function asServiceAccount<T extends KubeConfig>(
  admin: KubeConfig,
  namespace: string,
  serviceAccount: string,
  target: T,
): Promise<T> {
  const server = admin.getCurrentCluster();
  if (!server) throw new Error('the admin KubeConfig has no current cluster');
  const token = await serviceAccountToken(admin, namespace, serviceAccount);
  const user = `system:serviceaccount:${namespace}:${serviceAccount}`;
  target.loadFromClusterAndUser({ ...server, name: 'test' }, { name: user, token });
  return target;
}
