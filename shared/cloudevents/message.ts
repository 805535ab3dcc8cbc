import { CloudEvent, ValidationError } from 'cloudevents';
import { BpaError, describeError } from '../errors.js';
import {
  decodeUtf8,
  encodeBinary,
  encodeStructured,
  messageEncoding,
  readHttpEvent,
  requireCoreAttributes,
  type HeaderBag,
  type RawEvent,
} from './http-codec.js';
import { isJsonMediaType, mediaTypeOf } from './media-types.js';

/**
 * The function server's side of the HTTP binding: the codec (http-codec.ts) reads and writes the
 * wire, this file turns its bytes into an SDK `CloudEvent` (data parsed by its content type)
 * and back, strictly. The SDK's own `HTTP.toEvent` is lenient in ways a function server cannot
 * be (it invents `id` and `time`, defaults `specversion`, parses data only for an exact
 * `application/json`), so it is not used; the SDK's constructor has the last word on validity.
 */

/** Headers as Node gives them (lower-case names) or as plain strings. */
export type HeaderRecord = HeaderBag;

export type ParsedMessage =
  | { ok: true; event: CloudEvent<unknown>; mode: 'binary' | 'structured' }
  | { ok: false; reason: string; message: string };

const failure = (reason: string, message: string): ParsedMessage => ({ ok: false, reason, message });

/** A short text for a ValidationError (the SDK appends raw ajv objects to its message). */
function describeValidation(error: unknown): string {
  if (error instanceof ValidationError && Array.isArray(error.errors) && error.errors.length > 0) {
    const details = error.errors.map((item) => {
      if (item && typeof item === 'object' && 'message' in item) {
        const path = 'instancePath' in item ? String(item.instancePath).replace(/^\//, '') : '';
        return `${path ? `${path} ` : ''}${String(item.message)}`;
      }
      return String(item);
    });
    return details.join('; ');
  }
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}

/** The event's data as the handler sees it: parsed JSON, text, or bytes. */
function dataOf(raw: RawEvent): { ok: true; data: unknown } | { ok: false; failure: ParsedMessage } {
  if (raw.data === undefined) return { ok: true, data: undefined };
  if (raw.dataBase64) return { ok: true, data: new Uint8Array(raw.data) };
  const contentType = raw.attributes.datacontenttype;
  const mediaType = mediaTypeOf(contentType);
  if (isJsonMediaType(mediaType)) {
    const text = decodeUtf8(raw.data);
    if (text === undefined)
      return { ok: false, failure: failure('DataNotJson', 'The event data is not valid UTF-8 JSON') };
    try {
      return { ok: true, data: JSON.parse(text) };
    } catch (error) {
      return {
        ok: false,
        failure: failure(
          'DataNotJson',
          `The event data is not valid JSON (content type ${contentType ?? 'absent, meaning JSON'}): ${describeError(error).message}`,
        ),
      };
    }
  }
  if (mediaType.startsWith('text/')) {
    const text = decodeUtf8(raw.data);
    if (text === undefined)
      return {
        ok: false,
        failure: failure('MalformedEvent', `The ${mediaType} event data is not valid UTF-8`),
      };
    return { ok: true, data: text };
  }
  return { ok: true, data: new Uint8Array(raw.data) };
}

/**
 * Reads one CloudEvent from an HTTP message (request or response): binary mode (ce-* headers)
 * or structured mode (application/cloudevents+json). Batch mode is refused.
 */
export function parseHttpEvent(headers: HeaderRecord, body: Uint8Array): ParsedMessage {
  const lowered: HeaderBag = {};
  for (const [name, value] of Object.entries(headers)) lowered[name.toLowerCase()] = value;
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let raw: RawEvent;
  const mode = messageEncoding(lowered) === 'structured' ? 'structured' : 'binary';
  try {
    raw = readHttpEvent(lowered, bytes);
    requireCoreAttributes(raw.attributes, mode);
  } catch (error) {
    if (error instanceof BpaError) return failure(error.reason, error.message);
    throw error;
  }
  const data = dataOf(raw);
  if (!data.ok) return data.failure;
  try {
    const event = new CloudEvent<unknown>({
      ...raw.attributes,
      ...(data.data === undefined ? {} : { data: data.data }),
    });
    return { ok: true, event, mode };
  } catch (error) {
    return failure('InvalidEvent', `Invalid CloudEvent: ${describeValidation(error)}`);
  }
}

/** True when the response/request looks like it carries a CloudEvent (used for replies). */
export function looksLikeCloudEvent(headers: HeaderRecord): boolean {
  const lowered: HeaderBag = {};
  for (const [name, value] of Object.entries(headers)) lowered[name.toLowerCase()] = value;
  const encoding = messageEncoding(lowered);
  return (
    encoding === 'structured' || encoding === 'batch' || 'ce-id' in lowered || 'ce-specversion' in lowered
  );
}

export interface HttpMessage {
  headers: Record<string, string>;
  body: string | Uint8Array;
}

/** An SDK event in the codec's form: attributes as strings, data as the bytes it is sent as. */
export function rawEventOf(event: CloudEvent<unknown>): RawEvent {
  const { data, data_base64: _base64, ...envelope } = event.toJSON() as Record<string, unknown>;
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(envelope)) {
    if (value === undefined || value === null) continue;
    attributes[name] = value instanceof Date ? value.toISOString() : String(value);
  }
  const payload = event.data ?? data;
  if (payload === undefined || payload === null) return { attributes };
  if (ArrayBuffer.isView(payload)) {
    const view = payload as ArrayBufferView;
    return { attributes, data: Buffer.from(view.buffer, view.byteOffset, view.byteLength) };
  }
  // JSON data is always JSON-encoded (a string datum sent raw would not be JSON).
  const json = isJsonMediaType(mediaTypeOf(event.datacontenttype)) || typeof payload !== 'string';
  return { attributes, data: Buffer.from(json ? JSON.stringify(payload) : payload, 'utf8') };
}

/** Encodes an event for HTTP through the codec: binary mode (ce-* headers, data as the body) or structured. */
export function encodeHttpEvent(
  event: CloudEvent<unknown>,
  mode: 'binary' | 'structured' = 'binary',
): HttpMessage {
  const raw = rawEventOf(event);
  const message = mode === 'structured' ? encodeStructured(raw) : encodeBinary(raw);
  return { headers: message.headers, body: message.body.length === 0 ? '' : new Uint8Array(message.body) };
}
