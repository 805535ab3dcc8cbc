import { ApiException } from '@kubernetes/client-node';
import { BpaError, describeError, transient } from '../errors.js';

/** HTTP status of a failed Kubernetes API call, or undefined when the call never got an answer. */
export function apiStatusCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'number' && code >= 100 && code < 600) return code;
  }
  return undefined;
}

export const isNotFound = (error: unknown) => apiStatusCode(error) === 404;
export const isConflict = (error: unknown) => apiStatusCode(error) === 409;

const connectionErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** True when the call failed before an HTTP answer (API server down, connection reset...). */
export function isConnectionError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    if (typeof e !== 'object') return false;
    const { code, errno, name, type } = e as Record<string, unknown>;
    if (typeof code === 'string' && connectionErrorCodes.has(code)) return true;
    if (typeof errno === 'string' && connectionErrorCodes.has(errno)) return true;
    if (name === 'FetchError' || type === 'system' || name === 'AbortError') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The `message` of a Kubernetes Status body, when there is one. */
export function apiMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = error.body;
    const parsed = typeof body === 'string' ? safeJson(body) : body;
    if (parsed && typeof parsed === 'object' && 'message' in parsed)
      return String((parsed as { message: unknown }).message);
    return `HTTP ${error.code}`;
  }
  return describeError(error).message;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** What the functions write in a tenant's namespace (their `:tenant` ClusterRoles, manifests/tenant). */
const tenantResources = new Set([
  'provisionings',
  'provisionings/status',
  'softwares/status',
  'configmaps',
  'events',
  'secrets',
  'jobs',
  'serviceaccounts',
  'roles',
  'rolebindings',
  'leases',
]);

/**
 * RBAC's refusal of a ServiceAccount in another namespace than its own, on what a `:tenant`
 * ClusterRole grants: the namespace was not onboarded (docs/adr/0013-tenancy.md point 4). The
 * API server's wording: `User "system:serviceaccount:<ns>:<sa>" cannot <verb> resource "<res>"
 * [in API group "<g>"] in the namespace "<target>"`.
 */
const forbiddenByRbac =
  /User "system:serviceaccount:([^":]+):[^"]+" cannot \S+ resource "([^"]+)"(?: in API group "[^"]*")? in the namespace "([^"]+)"/;

/** The tenant namespace a 403 says was not onboarded, if it says so. */
export function notOnboardedNamespace(message: string): string | undefined {
  const match = forbiddenByRbac.exec(message);
  if (!match) return undefined;
  const [, ownNamespace, resource, namespace] = match;
  if (!resource || !namespace || namespace === ownNamespace || !tenantResources.has(resource))
    return undefined;
  return namespace;
}

/** The command that onboards a namespace (manifests/tenant; docs/deploy.md "Onboarding a namespace"). */
export const onboardCommand = (namespace: string) => `kubectl apply -n ${namespace} -k manifests/tenant`;

/** The reason of an error that says a namespace was not onboarded: answered 204, nothing retried. */
export const namespaceNotOnboarded = 'NamespaceNotOnboarded';

/** The namespace an error of this reason names (details.namespace), else undefined. */
const namespaceOfError =
  (reason: string) =>
  (error: unknown): string | undefined =>
    error instanceof BpaError && error.reason === reason && typeof error.details?.namespace === 'string'
      ? error.details.namespace
      : undefined;

/** The namespace of a NamespaceNotOnboarded error, else undefined. */
export const notOnboardedIn = namespaceOfError(namespaceNotOnboarded);

/**
 * NamespaceLifecycle admission's refusal of a create in a namespace being deleted (403, cause
 * `NamespaceTerminating`): "unable to create new content in namespace <ns> because it is being
 * terminated". The namespace controller deletes everything there, so what was to be written would
 * go with it: nothing to retry. (A Provisioning there goes through its deletion once the namespace
 * controller has marked it; until then a sweep may still try the next step of its chain.)
 */
const terminatingRefusal = /unable to create new content in namespace (\S+) because it is being terminated/;

/** The namespace a 403 says is being deleted, if it says so. */
export function terminatingNamespace(message: string): string | undefined {
  return terminatingRefusal.exec(message)?.[1];
}

/** The reason of an error that says the namespace is being deleted: answered 204, nothing retried. */
export const namespaceTerminating = 'NamespaceTerminating';

/** The namespace of a NamespaceTerminating error, else undefined. */
export const terminatingIn = namespaceOfError(namespaceTerminating);

/**
 * Turns a failed API call into a BpaError the function server maps to the right HTTP status:
 * 5xx, 429 and connection failures are transient (503, so the broker retries); anything else is
 * an internal error (500) naming what was being done. BpaErrors pass through unchanged.
 */
export function classifyApiError(error: unknown, action: string): BpaError {
  if (error instanceof BpaError) return error;
  const status = apiStatusCode(error);
  if (status === undefined ? isConnectionError(error) : status >= 500 || status === 429)
    return transient(
      'KubernetesApiUnavailable',
      `Kubernetes API unavailable while trying to ${action}: ${apiMessage(error)}`,
      {
        status,
      },
    );
  if (status === 409)
    return transient(
      'KubernetesConflict',
      `Conflicting update while trying to ${action}: ${apiMessage(error)}`,
    );
  const notOnboarded = status === 403 ? notOnboardedNamespace(apiMessage(error)) : undefined;
  if (notOnboarded)
    return new BpaError(
      namespaceNotOnboarded,
      `Namespace ${notOnboarded} is not onboarded: the functions may not write there (${onboardCommand(notOnboarded)}); refused to ${action}`,
      'internal',
      { status, namespace: notOnboarded },
    );
  const terminating = status === 403 ? terminatingNamespace(apiMessage(error)) : undefined;
  if (terminating)
    return new BpaError(
      namespaceTerminating,
      `Namespace ${terminating} is being deleted: refused to ${action}`,
      'internal',
      { status, namespace: terminating },
    );
  return new BpaError(
    status === 403 ? 'KubernetesForbidden' : 'KubernetesApiError',
    `Kubernetes API refused to ${action}: ${apiMessage(error)}`,
    'internal',
    { status },
  );
}

/** Runs an API call; failures become classified BpaErrors. */
export async function callApi<T>(action: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw classifyApiError(error, action);
  }
}

/** Runs a read; 404 becomes undefined, other failures classified BpaErrors. */
export async function readOrUndefined<T>(action: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw classifyApiError(error, action);
  }
}
