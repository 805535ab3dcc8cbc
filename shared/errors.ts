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

/** HTTP status a function server answers for an error thrown by a handler. */
export function httpStatusFor(error: unknown): number {
  if (error instanceof BpaError) {
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
  return 500;
}

/** Reason and message for a status condition or an Event, whatever was thrown. */
export function describeError(error: unknown): { reason: string; message: string } {
  if (error instanceof BpaError) return { reason: error.reason, message: error.message };
  if (error instanceof Error) return { reason: 'InternalError', message: error.message };
  return { reason: 'InternalError', message: String(error) };
}
