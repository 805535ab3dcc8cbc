/**
 * One codec for the HTTP binding: the broker's byte-level path (decodeHttpEvent) and the function
 * server's SDK path (parseHttpEvent) read the same wire the same way, refuse the same messages
 * with the same reasons, and what one writes the other reads back unchanged.
 */
import { CloudEvent } from 'cloudevents';
import { BpaError } from '../../../shared/errors.js';
import {
  decodeHttpEvent,
  encodeBinary,
  encodeStructured,
  type HeaderBag,
} from '../../../shared/cloudevents/http-codec.js';
import { encodeHttpEvent, parseHttpEvent } from '../../../shared/cloudevents/message.js';

const binary = (extra: HeaderBag = {}): HeaderBag => ({
  'ce-id': 'e-1',
  'ce-source': '/test',
  'ce-type': 'org.example.test',
  'ce-specversion': '1.0',
  'content-type': 'application/json',
  ...extra,
});
const structuredHeaders = { 'content-type': 'application/cloudevents+json' };

function brokerReason(headers: HeaderBag, body: string | Buffer): string | undefined {
  try {
    decodeHttpEvent(headers, Buffer.from(body));
    return undefined;
  } catch (error) {
    if (error instanceof BpaError) return error.reason;
    throw error;
  }
}

function serverReason(headers: HeaderBag, body: string | Buffer): string | undefined {
  const parsed = parseHttpEvent(headers, Buffer.from(body));
  return parsed.ok ? undefined : parsed.reason;
}

describe('the broker and the function server refuse the same messages with the same reasons', () => {
  const withoutHeader = (name: string) => {
    const headers = binary();
    delete headers[name];
    return headers;
  };
  const cases: [string, HeaderBag, string | Buffer, string][] = [
    ['binary without id', withoutHeader('ce-id'), '{}', 'MissingAttribute'],
    ['binary without specversion', withoutHeader('ce-specversion'), '{}', 'MissingAttribute'],
    ['specversion 0.3', binary({ 'ce-specversion': '0.3' }), '{}', 'UnsupportedSpecVersion'],
    ['a batch', { 'content-type': 'application/cloudevents-batch+json' }, '[]', 'BatchNotSupported'],
    [
      'an XML event format',
      { 'content-type': 'application/cloudevents+xml' },
      '<e/>',
      'UnsupportedEventFormat',
    ],
    ['no CloudEvent', { 'content-type': 'application/json' }, '{}', 'NotACloudEvent'],
    ['structured, not JSON', structuredHeaders, '{nope', 'MalformedEvent'],
    ['structured, an array', structuredHeaders, '[1]', 'MalformedEvent'],
    ['structured, not UTF-8', structuredHeaders, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 'MalformedEvent'],
    [
      'structured, an object attribute',
      structuredHeaders,
      JSON.stringify({ id: '1', source: '/s', type: 't', specversion: '1.0', subject: { a: 1 } }),
      'InvalidEvent',
    ],
    ['an invalid extension name', binary({ 'ce-bad_name': 'x' }), '{}', 'InvalidEvent'],
    [
      'structured, a number for id',
      structuredHeaders,
      JSON.stringify({ id: -15, source: '/s', type: 't', specversion: '1.0' }),
      'InvalidEvent',
    ],
  ];
  it.each(cases)('%s', (_name, headers, body, reason) => {
    expect(brokerReason(headers, body)).toBe(reason);
    expect(serverReason(headers, body)).toBe(reason);
  });
});

describe('what one side writes, the other reads back', () => {
  it('binary JSON data, with a subject outside ASCII (percent-encoded on the wire)', () => {
    const event = new CloudEvent<unknown>({
      id: 'e-2',
      source: '/s',
      type: 'org.example.test',
      subject: 'namespaces/ä b/provisionings/"x"',
      cluster: 'c1',
      datacontenttype: 'application/json',
      data: { nodes: ['m1', 'w1'] },
    });
    const message = encodeHttpEvent(event, 'binary');
    expect(message.headers['ce-subject']).toBe('namespaces/%C3%A4%20b/provisionings/%22x%22');
    const raw = decodeHttpEvent(message.headers, Buffer.from(message.body));
    expect(raw.attributes).toMatchObject({ subject: event.subject, cluster: 'c1' });
    expect(JSON.parse(raw.data!.toString('utf8'))).toEqual({ nodes: ['m1', 'w1'] });
    const parsed = parseHttpEvent(encodeBinary(raw).headers, encodeBinary(raw).body);
    expect(parsed.ok && parsed.event.data).toEqual({ nodes: ['m1', 'w1'] });
    expect(parsed.ok && parsed.event.subject).toBe(event.subject);
  });

  it('a JSON string datum stays JSON (quoted), in both modes', () => {
    const event = new CloudEvent<unknown>({
      id: 'e-3',
      source: '/s',
      type: 't',
      datacontenttype: 'application/json',
      data: 'hi',
    });
    for (const mode of ['binary', 'structured'] as const) {
      const message = encodeHttpEvent(event, mode);
      const parsed = parseHttpEvent(message.headers, Buffer.from(message.body));
      expect(parsed.ok && parsed.event.data).toBe('hi');
    }
    expect(Buffer.from(encodeHttpEvent(event, 'binary').body).toString()).toBe('"hi"');
  });

  it('structured data_base64 stays opaque bytes, even with no content type', () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251]);
    const body = JSON.stringify({
      id: '1',
      source: '/s',
      type: 't',
      specversion: '1.0',
      data_base64: bytes.toString('base64'),
    });
    const raw = decodeHttpEvent(structuredHeaders, Buffer.from(body));
    expect(raw.dataBase64).toBe(true);
    expect(raw.data).toEqual(bytes);
    const parsed = parseHttpEvent(structuredHeaders, Buffer.from(body));
    expect(parsed.ok && Buffer.from(parsed.event.data as Uint8Array)).toEqual(bytes);
    // The broker forwards it as data_base64 again, never as a JSON guess.
    const forwarded = JSON.parse(encodeStructured(raw).body.toString()) as Record<string, unknown>;
    expect(forwarded.data_base64).toBe(bytes.toString('base64'));
    expect(forwarded).not.toHaveProperty('data');
  });

  it('structured extensions may be integers or booleans, read as their string form', () => {
    const body = JSON.stringify({
      id: '1',
      source: '/s',
      type: 't',
      specversion: '1.0',
      attempt: 3,
      retried: true,
    });
    expect(decodeHttpEvent(structuredHeaders, Buffer.from(body)).attributes).toMatchObject({
      attempt: '3',
      retried: 'true',
    });
  });

  it('text data is text, other media types are bytes', () => {
    const text = parseHttpEvent(
      binary({ 'content-type': 'text/plain; charset=utf-8' }),
      Buffer.from('héllo'),
    );
    expect(text.ok && text.event.data).toBe('héllo');
    const octets = parseHttpEvent(
      binary({ 'content-type': 'application/octet-stream' }),
      Buffer.from([9, 8]),
    );
    expect(octets.ok && Array.from(octets.event.data as Uint8Array)).toEqual([9, 8]);
  });
});
