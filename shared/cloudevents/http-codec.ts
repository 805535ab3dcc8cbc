import { invalid } from '../errors.js';
import { isJsonMediaType, mediaTypeOf } from './media-types.js';

/**
 * The CloudEvents HTTP binding at the byte level: binary and structured mode in and out, with no
 * SDK object in between. The broker, the local sources and the sink senders move events with it
 * (a hop costs a header map and a buffer, and an event leaves with the payload its producer
 * wrote); the function server's strict SDK adapter (message.ts) shares its media types.
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
}

/** How an HTTP message carries a CloudEvent (the Go SDK's `binding.Encoding`). */
export type MessageEncoding = 'binary' | 'structured' | 'batch' | 'unknown';

type HeaderBag = Record<string, string | string[] | undefined>;

const header = (headers: HeaderBag, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** Binary when `ce-specversion` is present, structured for `application/cloudevents+json`. */
export function messageEncoding(headers: HeaderBag): MessageEncoding {
  const contentType = (header(headers, 'content-type') ?? '').toLowerCase();
  if (contentType.startsWith('application/cloudevents-batch')) return 'batch';
  if (contentType.startsWith('application/cloudevents')) return 'structured';
  if (header(headers, 'ce-specversion') !== undefined) return 'binary';
  return 'unknown';
}

/** Parses a binary- or structured-mode HTTP message and validates it; throws BpaError InvalidCloudEvent. */
export function decodeHttpEvent(headers: HeaderBag, body: Buffer): RawEvent {
  const encoding = messageEncoding(headers);
  let event: RawEvent;
  if (encoding === 'binary') event = decodeBinary(headers, body);
  else if (encoding === 'structured') event = decodeStructured(body);
  else if (encoding === 'batch') throw invalid('InvalidCloudEvent', 'batched CloudEvents are not accepted');
  else
    throw invalid(
      'InvalidCloudEvent',
      'no CloudEvent found: neither ce-specversion nor a CloudEvents content type',
    );
  validateEvent(event);
  return event;
}

function decodeBinary(headers: HeaderBag, body: Buffer): RawEvent {
  const attributes: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers)) {
    if (raw === undefined || !name.startsWith('ce-')) continue;
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    attributes[name.slice(3).toLowerCase()] = percentDecode(value);
  }
  const contentType = header(headers, 'content-type');
  if (contentType) attributes.datacontenttype = contentType;
  return body.length > 0 ? { attributes, data: body } : { attributes };
}

function decodeStructured(body: Buffer): RawEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw invalid('InvalidCloudEvent', `structured CloudEvent is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalid('InvalidCloudEvent', 'structured CloudEvent must be a JSON object');
  }
  const attributes: Record<string, string> = {};
  const record = parsed as Record<string, unknown>;
  for (const [name, value] of Object.entries(record)) {
    if (name === 'data' || name === 'data_base64' || value === null) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      attributes[name] = String(value);
    } else {
      throw invalid('InvalidCloudEvent', `attribute "${name}" must be a string, number or boolean`);
    }
  }
  if (typeof record.data_base64 === 'string') {
    return { attributes, data: Buffer.from(record.data_base64, 'base64') };
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

/** CloudEvents 1.0 validation (what the Go SDK's `event.Validate()` checks). */
export function validateEvent(event: RawEvent): void {
  const { attributes } = event;
  const problems: string[] = [];
  if (attributes.specversion !== '1.0')
    problems.push(`specversion must be "1.0", got ${JSON.stringify(attributes.specversion)}`);
  for (const required of ['id', 'source', 'type'] as const) {
    if (!attributes[required]) problems.push(`${required} is required and must be non-empty`);
  }
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
  if (problems.length > 0) throw invalid('InvalidCloudEvent', problems.join('; '));
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
    if (contentType === undefined || isJsonContentType(contentType)) {
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
