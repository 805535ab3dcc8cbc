/**
 * The one table from reasons (and refused Kubernetes API calls) to HTTP statuses
 * (shared/errors.ts httpStatusFor, eventStatusFor): a 4xx for what the client sent, a 5xx for the
 * server's or a dependency's failure, and nothing else.
 */
import { describe, expect, it } from '@jest/globals';
import { ApiException } from '@kubernetes/client-node';
import {
  BpaError,
  clientStatusOfApiRefusal,
  eventStatusFor,
  httpStatusByReason,
  httpStatusFor,
  invalid,
  transient,
} from '../../../shared/errors.js';
import { classifyApiError, terminatingIn } from '../../../shared/k8s/api-errors.js';

/** A refusal as @kubernetes/client-node throws it: the API server's Status body. */
const refusal = (code: number, reason: string, message: string) =>
  new ApiException(
    code,
    `HTTP-Code: ${code}`,
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code }),
    {},
  );

/** kube-apiserver's NamespaceLifecycle wording for a create in a namespace being deleted. */
const terminatingMessage = (resource: string, name: string, namespace: string) =>
  `${resource} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`;

const clientStatuses = [400, 401, 403, 404, 405, 409, 413, 415, 422, 429];

describe('httpStatusByReason', () => {
  it('gives every reason a client status of the contract or a 5xx, and CamelCase names', () => {
    for (const [reason, status] of Object.entries(httpStatusByReason)) {
      expect(reason).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(clientStatuses.includes(status) || (status >= 500 && status <= 599)).toBe(true);
    }
  });

  it('maps the image service and event reasons to the status their meaning calls for', () => {
    const expected: Record<string, number> = {
      InvalidMetadata: 400,
      InvalidEventData: 400,
      UnacceptedEventType: 400,
      BodyTooLarge: 400,
      Unauthenticated: 401,
      InvalidToken: 401,
      Forbidden: 403,
      ImageNotFound: 404,
      NamespaceNotFound: 404,
      MethodNotAllowed: 405,
      ImageExists: 409,
      UploadOffsetConflict: 409,
      FormTooLarge: 413,
      ImageTooLarge: 413,
      UnsupportedMediaType: 415,
      TooManyRequests: 429,
      KubernetesApiUnavailable: 503,
      KubernetesForbidden: 500,
    };
    for (const [reason, status] of Object.entries(expected))
      expect([reason, httpStatusFor(new BpaError(reason, 'x', 'internal'))]).toEqual([reason, status]);
  });

  it('lets the table win over the kind, and an error’s own status over its kind', () => {
    expect(httpStatusFor(transient('UploadOffsetConflict', 'at 3'))).toBe(409);
    const own = Object.assign(new BpaError('SomethingNew', 'teapot', 'invalid'), { status: 418 });
    expect(httpStatusFor(own)).toBe(418);
    const bogus = Object.assign(new BpaError('SomethingElse', 'x', 'invalid'), { status: 99 });
    expect(httpStatusFor(bogus)).toBe(400);
  });

  it('falls back on the kind, and answers 500 for anything that is not a BpaError', () => {
    expect(httpStatusFor(invalid('Unlisted', 'x'))).toBe(400);
    expect(httpStatusFor(new BpaError('HostNotFound', 'x'))).toBe(422);
    expect(httpStatusFor(transient('Unlisted', 'x'))).toBe(503);
    expect(httpStatusFor(new BpaError('Unlisted', 'x', 'internal'))).toBe(500);
    expect(httpStatusFor(new TypeError('bug'))).toBe(500);
    expect(httpStatusFor('a string')).toBe(500);
  });
});

describe('refused Kubernetes API calls', () => {
  it('answers a missing owner namespace 404, naming it (the REST agent issue 28 reproduction)', () => {
    const error = classifyApiError(
      refusal(404, 'NotFound', 'namespaces "alpha" not found'),
      'create Image alpha/beta.container.qwerty123',
    );
    expect(httpStatusFor(error)).toBe(404);
    expect(error.message).toContain('namespaces "alpha" not found');
  });

  it('maps refusals caused by the input to their 4xx, and the server’s own to 5xx', () => {
    const cases: [number, string, string, number][] = [
      [400, 'BadRequest', 'the body is not a valid object', 400],
      [404, 'NotFound', 'images.bpa.akraino.org "x" not found', 404],
      [409, 'AlreadyExists', 'images.bpa.akraino.org "x" already exists', 409],
      [409, 'Conflict', 'the object has been modified', 409],
      [413, 'RequestEntityTooLarge', 'request is too large', 413],
      [422, 'Invalid', 'Image.bpa.akraino.org "X" is invalid: metadata.name', 422],
      // The service's own rights, credentials or deployment: not the client's doing.
      [403, 'Forbidden', 'images is forbidden: User "system:serviceaccount:x:y" cannot create', 500],
      // NamespaceLifecycle: the namespace is being deleted (an upload into it cannot succeed).
      [403, 'Forbidden', terminatingMessage('images', 'x', 'gone'), 409],
      [401, 'Unauthorized', 'Unauthorized', 500],
      [404, 'NotFound', 'the server could not find the requested resource', 500],
      [410, 'Gone', 'too old resource version', 500],
      [429, 'TooManyRequests', 'slow down', 503],
      [500, 'InternalError', 'etcd', 503],
      [503, 'ServiceUnavailable', 'down', 503],
    ];
    for (const [code, reason, message, status] of cases)
      expect([code, reason, httpStatusFor(classifyApiError(refusal(code, reason, message), 'act'))]).toEqual([
        code,
        reason,
        status,
      ]);
  });

  it('names the namespace a refusal says is being deleted (NamespaceTerminating, not retried)', () => {
    const refused = classifyApiError(
      refusal(403, 'Forbidden', terminatingMessage('secrets', 'c-admin-kubeconfig', 'tenant-a')),
      'create Secret tenant-a/c-admin-kubeconfig',
    );
    expect(refused).toMatchObject({ reason: 'NamespaceTerminating' });
    expect(terminatingIn(refused)).toBe('tenant-a');
    expect(
      terminatingIn(
        classifyApiError(refusal(403, 'Forbidden', 'secrets is forbidden: User "u" cannot create'), 'act'),
      ),
    ).toBeUndefined();
    expect(terminatingIn(new Error(terminatingMessage('secrets', 'x', 'tenant-a')))).toBeUndefined();
  });

  it('answers a call that got no answer 503', () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(httpStatusFor(classifyApiError(down, 'act'))).toBe(503);
  });

  it('only maps refusals of a known status', () => {
    expect(clientStatusOfApiRefusal(undefined, 'x')).toBeUndefined();
    expect(clientStatusOfApiRefusal(404, '404 page not found')).toBeUndefined();
    expect(clientStatusOfApiRefusal(422, 'invalid')).toBe(422);
  });
});

describe('eventStatusFor: what a function server answers a CloudEvent with', () => {
  it('never answers a status Knative retries for an event that can never succeed', () => {
    const gone = classifyApiError(refusal(404, 'NotFound', 'namespaces "gone" not found'), 'act');
    expect(eventStatusFor(gone)).toBe(422);
    expect(eventStatusFor(new BpaError('ImageTooLarge', 'x', 'invalid'))).toBe(400);
    expect(eventStatusFor(invalid('InvalidEventData', 'x'))).toBe(400);
  });

  it('keeps the statuses whose retry is right: a conflict, a dependency down', () => {
    expect(eventStatusFor(classifyApiError(refusal(409, 'Conflict', 'modified'), 'act'))).toBe(409);
    expect(eventStatusFor(transient('KubernetesApiUnavailable', 'down'))).toBe(503);
    expect(eventStatusFor(new Error('bug'))).toBe(500);
  });
});
