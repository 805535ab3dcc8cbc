import { BpaError } from '../../shared/errors.js';

/** An HTTP answer the routes give for a known failure: status, CamelCase reason, message (and extra headers, e.g. Retry-After). */
export class HttpFailure extends BpaError {
  constructor(
    readonly status: number,
    reason: string,
    message: string,
    /** Headers the answer carries (Allow of a 405, Upload-Offset of a 409). */
    readonly headers: Record<string, string> = {},
  ) {
    super(reason, message, status >= 500 ? 'transient' : 'invalid');
  }
}
