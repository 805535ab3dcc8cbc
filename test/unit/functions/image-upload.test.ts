import { bearerToken } from '../../../functions/image-upload/access.js';
import { byteRange, downloadRoute } from '../../../functions/image-upload/downloads.js';
import { decodeUploadId, encodeUploadId } from '../../../functions/image-upload/tus.js';

describe('image-upload pure parts', () => {
  const etag = '"abc-2"';
  const modified = new Date('2026-12-01T08:00:00Z');

  it('reads one byte range the way RFC 9110 says', () => {
    expect(byteRange(undefined, undefined, etag, modified, 100)).toBeUndefined();
    expect(byteRange('bytes=0-9', undefined, etag, modified, 100)).toEqual({ start: 0, end: 9 });
    expect(byteRange('bytes=90-', undefined, etag, modified, 100)).toEqual({ start: 90, end: 99 });
    expect(byteRange('bytes=90-500', undefined, etag, modified, 100)).toEqual({ start: 90, end: 99 });
    expect(byteRange('bytes=-10', undefined, etag, modified, 100)).toEqual({ start: 90, end: 99 });
    expect(byteRange('bytes=-500', undefined, etag, modified, 100)).toEqual({ start: 0, end: 99 });
    expect(byteRange('bytes=100-', undefined, etag, modified, 100)).toBe('unsatisfiable');
    expect(byteRange('bytes=9-3', undefined, etag, modified, 100)).toBe('unsatisfiable');
    expect(byteRange('bytes=-0', undefined, etag, modified, 100)).toBe('unsatisfiable');
    expect(byteRange('bytes=0-1,5-6', undefined, etag, modified, 100)).toBeUndefined();
    expect(byteRange('items=0-1', undefined, etag, modified, 100)).toBeUndefined();
  });

  it('sends the whole body when If-Range names another version', () => {
    expect(byteRange('bytes=0-9', etag, etag, modified, 100)).toEqual({ start: 0, end: 9 });
    expect(byteRange('bytes=0-9', modified.toUTCString(), etag, modified, 100)).toEqual({ start: 0, end: 9 });
    expect(byteRange('bytes=0-9', '"other"', etag, modified, 100)).toBeUndefined();
  });

  it('routes downloads and checksum files by namespace and Image name only', () => {
    expect(downloadRoute.exec('/images/alpha/beta.os.x')?.slice(1, 4)).toEqual([
      'alpha',
      'beta.os.x',
      undefined,
    ]);
    expect(downloadRoute.exec('/images/alpha/beta.os.x.sha256sum')?.slice(1, 4)).toEqual([
      'alpha',
      'beta.os.x',
      '.sha256sum',
    ]);
    for (const path of ['/images/alpha/../x', '/images/Alpha/x', '/images/alpha/x/y', '/images/alpha/'])
      expect(downloadRoute.test(path)).toBe(false);
  });

  it('takes a bearer token and nothing else', () => {
    expect(bearerToken({ authorization: 'Bearer abc.def' })).toBe('abc.def');
    expect(bearerToken({ authorization: 'bearer abc' })).toBe('abc');
    expect(bearerToken({ authorization: 'Basic dXNlcg==' })).toBeUndefined();
    expect(bearerToken({ authorization: 'Bearer a b' })).toBeUndefined();
    expect(bearerToken({})).toBeUndefined();
  });

  it('uses object keys as upload ids, one URL segment each, and refuses any other id', () => {
    const key = 'operatingsystem/alpha/beta/Ubuntu_20.04.qcow2';
    const id = encodeUploadId(key);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeUploadId(id)).toBe(key);
    expect(decodeUploadId(encodeUploadId('operatingsystem/alpha/beta/../../etc'))).toBeUndefined();
    expect(decodeUploadId('not/base64')).toBeUndefined();
  });
});
