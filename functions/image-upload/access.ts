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

/** A refusal: 401 (who are you?) or 403 (you may not), with a CamelCase reason. */
export class AccessDenied extends BpaError {
  constructor(
    readonly status: 401 | 403,
    reason: string,
    message: string,
  ) {
    super(reason, message, 'invalid');
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
 * Positive answers are reused for `cacheSeconds`, keyed by a hash of the token (never the token).
 */
export class ImageAccess {
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  private readonly allowed = new Map<string, number>();

  constructor(
    kubeConfig: KubeConfig,
    private readonly cacheSeconds = 10,
    private readonly now: () => number = Date.now,
  ) {
    this.authn = kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authz = kubeConfig.makeApiClient(AuthorizationV1Api);
  }

  /** Resolves with the caller, or rejects with AccessDenied (401/403) or a classified API error. */
  async authorize(
    headers: IncomingHttpHeaders,
    namespace: string,
    verb: ImageVerb,
  ): Promise<Caller | undefined> {
    const token = bearerToken(headers);
    if (!token)
      throw new AccessDenied(
        401,
        'Unauthenticated',
        'A Kubernetes bearer token is required (Authorization: Bearer <token>)',
      );
    const key = `${createHash('sha256').update(token).digest('hex')}/${namespace}/${verb}`;
    const until = this.allowed.get(key);
    if (until !== undefined && until > this.now()) return undefined;
    const caller = await this.authenticate(token);
    await this.check(caller, namespace, verb);
    if (this.cacheSeconds > 0) {
      if (this.allowed.size > 10_000) this.allowed.clear();
      this.allowed.set(key, this.now() + this.cacheSeconds * 1000);
    }
    return caller;
  }

  private async authenticate(token: string): Promise<Caller> {
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
