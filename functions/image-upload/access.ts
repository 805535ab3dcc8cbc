import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { BpaError } from '../../shared/errors.js';
import { classifyApiError } from '../../shared/k8s/api-errors.js';
import { imageGroup, imagePlural } from '../../shared/schemas/image.js';

/** The verbs the image service checks on `images` (bpa.akraino.org) in a namespace. */
export type ImageVerb = 'create' | 'get' | 'update' | 'delete';

/** An authenticated caller, as the API server's TokenReview described it. */
export interface Caller {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** A refusal: 401 (who are you?), 403 (you may not) or 429 (too many failed tries; retry after `retryAfterSeconds`). */
export class AccessDenied extends BpaError {
  constructor(
    readonly status: 401 | 403 | 429,
    reason: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(reason, message, 'invalid');
  }

  /** The answer's extra headers: the Bearer challenge, or Retry-After. */
  get headers(): Record<string, string> {
    if (this.status === 401) return { 'www-authenticate': 'Bearer' };
    if (this.status === 429) return { 'retry-after': String(this.retryAfterSeconds ?? 1) };
    return {};
  }
}

export interface AuthLimits {
  /** Failed token reviews a client address may cause within the window. */
  failuresPerAddress: number;
  windowSeconds: number;
}

/**
 * Counts failed token reviews per key in fixed windows. A key over its limit is refused until
 * its window ends; the map is bounded (oldest windows go first) so a flood of distinct keys
 * cannot grow it without end.
 */
class FailureWindows {
  private readonly windows = new Map<string, { count: number; until: number }>();
  constructor(private readonly maxKeys = 50_000) {}

  /** Seconds until `key` may try again, or 0 when it is under `limit`. */
  blockedFor(key: string, limit: number, now: number): number {
    const window = this.windows.get(key);
    if (!window || window.until <= now) return 0;
    return window.count >= limit ? Math.ceil((window.until - now) / 1000) : 0;
  }

  record(key: string, windowMs: number, now: number): void {
    const window = this.windows.get(key);
    if (window && window.until > now) {
      window.count += 1;
      return;
    }
    if (this.windows.size >= this.maxKeys) {
      for (const [k, w] of this.windows) if (w.until <= now) this.windows.delete(k);
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!);
    }
    this.windows.set(key, { count: 1, until: now + windowMs });
  }
}

/** The bearer token of a request, or undefined. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization;
  const match = typeof value === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  return match?.[1];
}

/**
 * Asks the API server whether a request's bearer token may <verb> images in a namespace:
 * TokenReview (who), then SubjectAccessReview (may they). The service's own ServiceAccount needs
 * `create` on tokenreviews and subjectaccessreviews (the system:auth-delegator ClusterRole).
 * Positive answers are reused for `cacheSeconds`, keyed by a hash of the token (never the token):
 * the TokenReview per token, the SubjectAccessReview per token, namespace and verb. Failed token
 * reviews are rate-limited (contract §12): a token that failed once, and a client address that
 * failed `failuresPerAddress` times, get 429 with Retry-After until the window ends, without a
 * TokenReview.
 */
export class ImageAccess {
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  private readonly allowed = new Map<string, number>();
  private readonly callers = new Map<string, { caller: Caller; until: number }>();
  private readonly failures = new FailureWindows();
  /** TokenReviews sent (tests count them; so could a metric). */
  tokenReviews = 0;

  constructor(
    kubeConfig: KubeConfig,
    private readonly cacheSeconds = 10,
    private readonly now: () => number = Date.now,
    private readonly limits: AuthLimits = { failuresPerAddress: 10, windowSeconds: 60 },
  ) {
    this.authn = kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authz = kubeConfig.makeApiClient(AuthorizationV1Api);
  }

  /**
   * Resolves with the caller, or rejects with AccessDenied (401/403/429) or a classified API
   * error. `client` is the caller's address (clientAddress()), for the failure limit.
   */
  async authorize(
    headers: IncomingHttpHeaders,
    namespace: string,
    verb: ImageVerb,
    client = 'unknown',
  ): Promise<Caller | undefined> {
    const token = bearerToken(headers);
    if (!token)
      throw new AccessDenied(
        401,
        'Unauthenticated',
        'A Kubernetes bearer token is required (Authorization: Bearer <token>)',
      );
    const tokenHash = createHash('sha256').update(token).digest('hex');
    const key = `${tokenHash}/${namespace}/${verb}`;
    const now = this.now();
    const until = this.allowed.get(key);
    if (until !== undefined && until > now) return undefined;
    const caller = await this.authenticate(token, tokenHash, client, now);
    await this.check(caller, namespace, verb);
    if (this.cacheSeconds > 0) {
      if (this.allowed.size > 10_000) this.allowed.clear();
      this.allowed.set(key, this.now() + this.cacheSeconds * 1000);
    }
    return caller;
  }

  private async authenticate(token: string, tokenHash: string, client: string, now: number): Promise<Caller> {
    const cached = this.callers.get(tokenHash);
    if (cached && cached.until > now) return cached.caller;
    const windowMs = this.limits.windowSeconds * 1000;
    const byToken = this.failures.blockedFor(`token/${tokenHash}`, 1, now);
    const byAddress = this.failures.blockedFor(`address/${client}`, this.limits.failuresPerAddress, now);
    if (byToken > 0 || byAddress > 0)
      throw new AccessDenied(
        429,
        'TooManyFailedTokenReviews',
        byToken > 0
          ? `This bearer token was refused in the last ${this.limits.windowSeconds} s; retry after ${byToken} s`
          : `${client} sent ${this.limits.failuresPerAddress} refused bearer tokens in ${this.limits.windowSeconds} s; retry after ${byAddress} s`,
        Math.max(byToken, byAddress),
      );
    try {
      const caller = await this.review(token);
      if (this.cacheSeconds > 0) {
        if (this.callers.size > 10_000) this.callers.clear();
        this.callers.set(tokenHash, { caller, until: now + this.cacheSeconds * 1000 });
      }
      return caller;
    } catch (error) {
      if (error instanceof AccessDenied) {
        this.failures.record(`token/${tokenHash}`, windowMs, now);
        this.failures.record(`address/${client}`, windowMs, now);
      }
      throw error;
    }
  }

  private async review(token: string): Promise<Caller> {
    this.tokenReviews += 1;
    let review;
    try {
      review = await this.authn.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      });
    } catch (error) {
      throw classifyApiError(error, 'review a bearer token');
    }
    const status = review.status;
    if (!status?.authenticated || !status.user?.username)
      throw new AccessDenied(
        401,
        'InvalidToken',
        `The bearer token is not valid${status?.error ? `: ${status.error}` : ''}`,
      );
    return {
      username: status.user.username,
      ...(status.user.uid ? { uid: status.user.uid } : {}),
      groups: status.user.groups ?? [],
      ...(status.user.extra ? { extra: status.user.extra } : {}),
    };
  }

  private async check(caller: Caller, namespace: string, verb: ImageVerb): Promise<void> {
    let review;
    try {
      review = await this.authz.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: caller.username,
            groups: caller.groups,
            ...(caller.uid ? { uid: caller.uid } : {}),
            ...(caller.extra ? { extra: caller.extra } : {}),
            resourceAttributes: { group: imageGroup, resource: imagePlural, namespace, verb },
          },
        },
      });
    } catch (error) {
      throw classifyApiError(error, 'review access to images');
    }
    if (!review.status?.allowed)
      throw new AccessDenied(
        403,
        'Forbidden',
        `${caller.username} may not ${verb} images.${imageGroup} in namespace ${namespace}`,
      );
  }
}

/**
 * The client's address for the failure limit: the socket's peer, or, behind `trustedHops`
 * proxies that append to X-Forwarded-For, the entry they added for it (a client can prepend
 * anything, so entries left of that are not trusted).
 */
export function clientAddress(
  request: { headers: IncomingHttpHeaders; socket: { remoteAddress?: string | undefined } },
  trustedHops: number,
): string {
  const peer = request.socket.remoteAddress ?? 'unknown';
  if (trustedHops <= 0) return peer;
  const header = request.headers['x-forwarded-for'];
  const entries = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return entries[entries.length - trustedHops] ?? peer;
}
