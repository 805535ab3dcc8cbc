/**
 * Every failure the product reports carries a CamelCase reason and a human message.
 * The mapping from an error to an HTTP status (function server) and to a status
 * condition (Kubernetes) lives here and nowhere else.
 */

/** How a failure should be treated by the caller. */
export type ErrorKind =
  /** The input is wrong (resource, event, file): retrying cannot help. HTTP 400. */
  | 'invalid'
  /** The world is not as the resource says (host not found, no IP): a False condition. HTTP 200/204 to the broker. */
  | 'resolution'
  /** A dependency hiccup (API server down, 409 that ran out of retries): retry later. HTTP 503. */
  | 'transient'
  /** A bug or an unexpected state. HTTP 500. */
  | 'internal';

export class BpaError extends Error {
  override readonly name = 'BpaError';
  constructor(
    /** CamelCase, stable, used as condition and Event reason. */
    readonly reason: string,
    message: string,
    readonly kind: ErrorKind = 'resolution',
    /** Extra machine-readable detail (never secrets). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const invalid = (reason: string, message: string, details?: Record<string, unknown>) =>
  new BpaError(reason, message, 'invalid', details);
export const transient = (reason: string, message: string, details?: Record<string, unknown>) =>
  new BpaError(reason, message, 'transient', details);

/**
 * The one table of HTTP statuses by reason: every reason an HTTP surface answers with (the
 * function server, the image service's tus, REST-agent and download routes) that always means
 * the same status, whatever threw it. A 4xx says the client's request cannot succeed as sent;
 * a 5xx says the server or one of its dependencies failed, and nothing else does.
 */
export const httpStatusByReason: Readonly<Record<string, number>> = {
  // 400: the request is malformed or contradicts itself; sending it again cannot help.
  BadRequest: 400,
  BodyTooLarge: 400, // an event's body: 400, not 413 (Knative sources retry 413; see function-server.ts)
  InvalidEvent: 400,
  InvalidEventData: 400,
  UnacceptedEventType: 400,
  InvalidForm: 400,
  InvalidMetadata: 400,
  MetadataMissing: 400,
  MetadataMismatch: 400,
  LengthImmutable: 400,
  LengthRequired: 400,
  EmptyImage: 400,
  UploadOffsetRequired: 400,
  WrongLength: 400,
  InvalidPath: 400,
  KubernetesBadRequest: 400,
  // 401 / 403: who the caller is, and what they may do.
  Unauthenticated: 401,
  InvalidToken: 401,
  Forbidden: 403,
  // 404: what the request names does not exist.
  NotFound: 404,
  NamespaceNotFound: 404,
  ObjectNotFound: 404,
  ImageNotFound: 404,
  ImageNotReady: 404,
  UploadNotFound: 404,
  UnknownImageType: 404,
  // 405, 409, 413, 415, 422, 429.
  MethodNotAllowed: 405,
  ImageExists: 409,
  UploadOffsetConflict: 409,
  KubernetesConflict: 409,
  NamespaceTerminating: 409, // the namespace is being deleted: nothing new may be created there
  FormTooLarge: 413,
  ImageTooLarge: 413,
  UnsupportedMediaType: 415,
  KubernetesInvalid: 422,
  TooManyRequests: 429,
  // 5xx: the server or a dependency.
  InternalError: 500,
  InvalidReply: 500,
  KubernetesForbidden: 500, // the service's own ServiceAccount lacks a right: its deployment is wrong
  KubernetesApiError: 500,
  KubernetesApiUnavailable: 503,
};

/**
 * The 4xx a refused Kubernetes API call maps to when the refusal is about what the client sent
 * (an owner namespace that does not exist, a name or value the API server rejects, an object that
 * exists or changed meanwhile); undefined when it is the server's own problem (its rights, its
 * credentials, a missing CRD).
 */
export function clientStatusOfApiRefusal(status: number | undefined, message: string): number | undefined {
  switch (status) {
    case 400:
    case 409:
    case 413:
    case 422:
      return status;
    case 404:
      // A missing resource type (a CRD not installed) is the deployment's fault; a missing object
      // or namespace is the request's.
      return /could not find the requested resource|404 page not found/i.test(message) ? undefined : 404;
    default:
      return undefined;
  }
}

/** An HTTP status carried by the error itself (the image service's HttpFailure, AccessDenied). */
function ownStatus(error: BpaError): number | undefined {
  const status = (error as { status?: unknown }).status;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599
    ? status
    : undefined;
}

/**
 * HTTP status for an error thrown while serving a request: the reason's entry in
 * httpStatusByReason, else the status the error carries, else (a refused Kubernetes API call)
 * the 4xx of a refusal caused by the client's input, else by kind: invalid 400, resolution 422,
 * transient 503, internal 500. Anything that is not a BpaError is a bug: 500.
 */
export function httpStatusFor(error: unknown): number {
  if (!(error instanceof BpaError)) return 500;
  const apiStatus = error.details?.['status'];
  if (error.reason === 'KubernetesApiError' && typeof apiStatus === 'number') {
    const client = clientStatusOfApiRefusal(apiStatus, error.message);
    if (client !== undefined) return client;
  }
  const byReason = Object.hasOwn(httpStatusByReason, error.reason)
    ? httpStatusByReason[error.reason]
    : undefined;
  if (byReason !== undefined) return byReason;
  const own = ownStatus(error);
  if (own !== undefined) return own;
  switch (error.kind) {
    case 'invalid':
      return 400;
    case 'transient':
      return 503;
    case 'resolution':
      return 422;
    default:
      return 500;
  }
}

/**
 * The status a function server answers a CloudEvent with, for an error thrown by its handler:
 * httpStatusFor(), except where Knative's delivery would retry a status for input that can never
 * succeed (its SelectiveRetry retries 404, 408, 409, 429 and 5xx): an object or namespace the event
 * leads to that does not exist is 422, not 404; a too-large document is 400, not 413. A 409 stays
 * 409: a conflicting update is a race, and a retry is what it needs.
 */
export function eventStatusFor(error: unknown): number {
  const status = httpStatusFor(error);
  if (status === 404) return 422;
  if (status === 413) return 400;
  return status;
}

/** Reason and message for a status condition or an Event, whatever was thrown. */
export function describeError(error: unknown): { reason: string; message: string } {
  if (error instanceof BpaError) return { reason: error.reason, message: error.message };
  if (error instanceof Error) return { reason: 'InternalError', message: error.message };
  return { reason: 'InternalError', message: String(error) };
}
