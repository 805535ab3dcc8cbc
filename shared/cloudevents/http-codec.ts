import { describeError, invalid } from '../errors.js';
import { isJsonMediaType, mediaTypeOf } from './media-types.js';

/**
 * The CloudEvents HTTP binding at the byte level, the project's one codec: binary and structured
 * mode in and out, with no SDK object in between. The broker, the local sources and the sink
 * senders move events with it (a hop costs a header map and a buffer, and an event leaves with the
 * payload its producer wrote); the function server's SDK adapter (message.ts) reads and writes
 * through it too and adds only the data parsing and the SDK's own validation.
 *
 * Refusals are BpaErrors (kind invalid, HTTP 400) with one reason per way a message can be wrong:
 * BatchNotSupported, UnsupportedEventFormat, NotACloudEvent, MalformedEvent, MissingAttribute,
 * UnsupportedSpecVersion, InvalidEvent.
 */

/**
 * A CloudEvent as it travels: attributes in their canonical string form (exactly what a
 * binary-mode `ce-` header carries) and the data as raw bytes.
 */
export interface RawEvent {
  /** Context attributes and extensions, including `datacontenttype` when set. */
  attributes: Record<string, string>;
  /** Data in the encoding named by `datacontenttype`; undefined when the event has no data. */
  data?: Buffer;
  /**
   * The data came as structured mode's `data_base64`: opaque bytes, whatever `datacontenttype`
   * says (absent there does not mean JSON).
   */
  dataBase64?: true;
}

/** How an HTTP message carries a CloudEvent (the Go SDK's `binding.Encoding`). */
export type MessageEncoding = 'binary' | 'structured' | 'batch' | 'unknown';

/** Headers as Node gives them (lower-case names); numbers for the few Node parses. */
export type HeaderBag = Record<string, string | string[] | number | undefined>;

const header = (headers: HeaderBag, name: string): string | undefined => {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
};

/**
 * Structured for a CloudEvents content type, batch for the batch format, binary when any `ce-`
 * header is present (so a binary event missing `ce-specversion` is named as such, not as "no
 * event"). Header names must be lower case, as Node gives them.
 */
export function messageEncoding(headers: HeaderBag): MessageEncoding {
  const mediaType = mediaTypeOf(header(headers, 'content-type'));
  if (mediaType.startsWith('application/cloudevents-batch')) return 'batch';
  if (mediaType.startsWith('application/cloudevents')) return 'structured';
  if (headers['ce-specversion'] !== undefined) return 'binary';
  for (const name in headers) if (name.startsWith('ce-')) return 'binary';
  return 'unknown';
}

/** Parses a binary- or structured-mode HTTP message and validates it (see `validateEvent`). */
export function decodeHttpEvent(headers: HeaderBag, body: Buffer): RawEvent {
  const event = readHttpEvent(headers, body);
  validateEvent(event);
  return event;
}

/**
 * Reads the attributes and the data bytes of one CloudEvent, refusing what is not one; the
 * attributes are not validated yet (`validateEvent`, or the SDK's constructor, does that).
 */
export function readHttpEvent(headers: HeaderBag, body: Buffer): RawEvent {
  const encoding = messageEncoding(headers);
  if (encoding === 'binary') return decodeBinary(headers, body);
  if (encoding === 'structured') {
    const mediaType = mediaTypeOf(header(headers, 'content-type'));
    if (mediaType !== 'application/cloudevents+json') {
      throw invalid('UnsupportedEventFormat', `CloudEvents format ${mediaType} is not supported (only JSON)`);
    }
    return decodeStructured(body);
  }
  if (encoding === 'batch') {
    throw invalid(
      'BatchNotSupported',
      'Batched CloudEvents (application/cloudevents-batch+json) are not accepted',
    );
  }
  throw invalid(
    'NotACloudEvent',
    'The request is not a CloudEvent: no ce-* headers (binary mode) and Content-Type is not application/cloudevents+json (structured mode)',
  );
}

function decodeBinary(headers: HeaderBag, body: Buffer): RawEvent {
  const attributes: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers)) {
    if (raw === undefined || !name.startsWith('ce-')) continue;
    const value = Array.isArray(raw) ? raw.join(',') : String(raw);
    attributes[name.slice(3)] = percentDecode(value);
  }
  const contentType = header(headers, 'content-type');
  if (contentType) attributes.datacontenttype = contentType;
  return body.length > 0 ? { attributes, data: body } : { attributes };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The text of UTF-8 bytes, or undefined when they are not valid UTF-8 (never a lossy decode). */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Context attributes the spec types as String, URI-reference or Timestamp: JSON strings in structured mode. */
const stringAttributes = new Set([
  'id',
  'source',
  'specversion',
  'type',
  'datacontenttype',
  'dataschema',
  'subject',
  'time',
]);

function decodeStructured(body: Buffer): RawEvent {
  const text = decodeUtf8(body);
  if (text === undefined) throw invalid('MalformedEvent', 'The structured CloudEvent is not valid UTF-8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid(
      'MalformedEvent',
      `The structured CloudEvent is not valid JSON: ${describeError(error).message}`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalid('MalformedEvent', 'The structured CloudEvent is not a JSON object');
  }
  const attributes: Record<string, string> = {};
  const record = parsed as Record<string, unknown>;
  for (const [name, value] of Object.entries(record)) {
    if (name === 'data' || name === 'data_base64' || value === null) continue;
    // The spec's own attributes are JSON strings (a number is no id); extensions may also be
    // integers or booleans, carried in their canonical string form.
    if (stringAttributes.has(name) && typeof value !== 'string') {
      throw invalid('InvalidEvent', `Invalid CloudEvent: attribute "${name}" must be a JSON string`);
    }
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      attributes[name] = String(value);
    } else {
      throw invalid(
        'InvalidEvent',
        `Invalid CloudEvent: attribute "${name}" must be a string, number or boolean`,
      );
    }
  }
  if ('data_base64' in record && record.data_base64 !== null) {
    if (typeof record.data_base64 !== 'string') {
      throw invalid('MalformedEvent', 'data_base64 of the structured CloudEvent is not a string');
    }
    return { attributes, data: Buffer.from(record.data_base64, 'base64'), dataBase64: true };
  }
  if (record.data === undefined || record.data === null) return { attributes };
  const contentType = attributes.datacontenttype;
  // Non-JSON content types carry their data as a JSON string holding the payload text.
  if (typeof record.data === 'string' && contentType !== undefined && !isJsonContentType(contentType)) {
    return { attributes, data: Buffer.from(record.data, 'utf8') };
  }
  return { attributes, data: Buffer.from(JSON.stringify(record.data), 'utf8') };
}

/** `application/json`, `text/json` or any `+json` suffix, parameters ignored. */
const isJsonContentType = (contentType: string) => isJsonMediaType(mediaTypeOf(contentType));

const attributeName = /^[a-z0-9]+$/;
const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const requiredAttributes = ['id', 'source', 'type', 'specversion'] as const;

/** The four required attributes are present and specversion is 1.0 (MissingAttribute, UnsupportedSpecVersion). */
export function requireCoreAttributes(
  attributes: Record<string, string>,
  mode?: 'binary' | 'structured',
): void {
  const what = mode ? `The ${mode}-mode CloudEvent` : 'The CloudEvent';
  for (const name of requiredAttributes) {
    if (!attributes[name]) {
      throw invalid(
        'MissingAttribute',
        `${what} has no '${name}' attribute (required: id, source, type, specversion)`,
      );
    }
  }
  if (attributes.specversion !== '1.0') {
    throw invalid(
      'UnsupportedSpecVersion',
      `CloudEvents specversion '${attributes.specversion}' is not supported (only 1.0)`,
    );
  }
}

/** CloudEvents 1.0 validation (what the Go SDK's `event.Validate()` checks). */
export function validateEvent(event: RawEvent): void {
  const { attributes } = event;
  requireCoreAttributes(attributes);
  const problems: string[] = [];
  for (const optional of ['subject', 'datacontenttype', 'dataschema'] as const) {
    if (attributes[optional] === '') problems.push(`${optional} must be non-empty when present`);
  }
  if (
    attributes.time !== undefined &&
    (!rfc3339.test(attributes.time) || Number.isNaN(Date.parse(attributes.time)))
  ) {
    problems.push(`time must be an RFC 3339 timestamp, got "${attributes.time}"`);
  }
  for (const name of Object.keys(attributes)) {
    if (!attributeName.test(name)) problems.push(`attribute name "${name}" must match [a-z0-9]+`);
  }
  if (problems.length > 0) throw invalid('InvalidEvent', `Invalid CloudEvent: ${problems.join('; ')}`);
}

/** Binary-mode HTTP message for an event: `ce-` headers, Content-Type, raw data. */
export function encodeBinary(event: RawEvent): { headers: Record<string, string>; body: Buffer } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.attributes)) {
    if (name === 'datacontenttype') continue;
    headers[`ce-${name}`] = percentEncode(value);
  }
  const contentType = event.attributes.datacontenttype ?? (event.data ? 'application/json' : undefined);
  if (contentType) headers['content-type'] = contentType;
  return { headers, body: event.data ?? Buffer.alloc(0) };
}

/** Structured-mode (JSON) HTTP message for an event (Trigger `delivery.format: json`). */
export function encodeStructured(event: RawEvent): { headers: Record<string, string>; body: Buffer } {
  const document: Record<string, unknown> = { ...event.attributes };
  if (event.data) {
    const contentType = event.attributes.datacontenttype;
    if (event.dataBase64) {
      document.data_base64 = event.data.toString('base64');
    } else if (contentType === undefined || isJsonContentType(contentType)) {
      try {
        document.data = JSON.parse(event.data.toString('utf8'));
      } catch {
        document.data_base64 = event.data.toString('base64');
      }
    } else if (contentType.toLowerCase().startsWith('text/')) {
      document.data = event.data.toString('utf8');
    } else {
      document.data_base64 = event.data.toString('base64');
    }
  }
  return {
    headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
    body: Buffer.from(JSON.stringify(document), 'utf8'),
  };
}

/** CloudEvents HTTP binding 3.1.3.2: space, `"`, `%` and anything outside printable ASCII. */
export function percentEncode(value: string): string {
  if (/^[\x21\x23\x24\x26-\x7e]*$/.test(value)) return value;
  let out = '';
  for (const char of value) {
    const code = char.codePointAt(0)!;
    if (code >= 0x21 && code <= 0x7e && char !== '"' && char !== '%') out += char;
    else
      for (const byte of Buffer.from(char, 'utf8'))
        out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Decodes `%XX` sequences as UTF-8; a malformed sequence leaves the value as it came. */
export function percentDecode(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
