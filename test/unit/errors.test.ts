import { BpaError, describeError, httpStatusFor, invalid, transient } from '../../shared/errors.js';

describe('error mapping', () => {
  it('maps error kinds to HTTP statuses in one place', () => {
    expect(httpStatusFor(invalid('BadEvent', 'no id'))).toBe(400);
    expect(httpStatusFor(transient('ApiUnavailable', 'down'))).toBe(503);
    expect(httpStatusFor(new BpaError('HostNotFound', 'Host with MAC Address x not found'))).toBe(422);
    expect(httpStatusFor(new Error('boom'))).toBe(500);
  });
  it('describes any thrown value as reason and message', () => {
    expect(describeError(new BpaError('HostNotFound', 'gone'))).toEqual({
      reason: 'HostNotFound',
      message: 'gone',
    });
    expect(describeError(new Error('boom'))).toEqual({ reason: 'InternalError', message: 'boom' });
    expect(describeError('text')).toEqual({ reason: 'InternalError', message: 'text' });
  });
});
