/**
 * A KubeConfig that records every API request made through it, as the RBAC authorizer sees it:
 * verb, API group, resource (with subresource), namespace and name. client-node asks the
 * KubeConfig to authenticate each request, so every call of every generated API client goes
 * through applySecurityAuthentication once, whatever the function does with the answer.
 */
import { KubeConfig } from '@kubernetes/client-node';

type RequestContext = Parameters<KubeConfig['applySecurityAuthentication']>[0];

/** One API request as an authorization attribute set. */
export interface ApiCall {
  verb: string;
  /** '' is the core group. */
  group: string;
  /** Plural resource, with `/subresource` when it is one. */
  resource: string;
  /** Undefined for a cluster-scoped request (a list in all namespaces). */
  namespace?: string;
  name?: string;
}

/** The verb the API server authorizes an HTTP request as (k8s.io/apiserver RequestInfo). */
function verbOf(method: string, named: boolean, watch: boolean): string {
  switch (method.toUpperCase()) {
    case 'GET':
      return named ? 'get' : watch ? 'watch' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}

/** Parses `/api/v1/...` and `/apis/<group>/<version>/...` request URLs. */
export function apiCallOf(method: string, url: string): ApiCall {
  const parsed = new URL(url);
  const parts = parsed.pathname.split('/').filter((p) => p !== '');
  let rest: string[];
  let group: string;
  if (parts[0] === 'api') {
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis') {
    group = parts[1] ?? '';
    rest = parts.slice(3);
  } else {
    throw new Error(`not a resource request: ${method} ${parsed.pathname}`);
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = '', name, subresource] = rest;
  const watch = parsed.searchParams.get('watch') === 'true' || parsed.searchParams.get('watch') === '1';
  return {
    verb: verbOf(method, name !== undefined, watch),
    group,
    resource: subresource ? `${resource}/${subresource}` : resource,
    ...(namespace === undefined ? {} : { namespace }),
    ...(name === undefined ? {} : { name }),
  };
}

export class RecordingKubeConfig extends KubeConfig {
  /** Every request so far, oldest first. */
  readonly calls: ApiCall[] = [];

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    this.calls.push(apiCallOf(context.getHttpMethod(), context.getUrl()));
    await super.applySecurityAuthentication(context);
  }
}
