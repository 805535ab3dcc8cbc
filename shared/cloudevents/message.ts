import { CloudEvent, HTTP, ValidationError } from 'cloudevents';
import { describeError } from '../errors.js';
import { isJsonMediaType, mediaTypeOf } from './media-types.js';

/**
 * CloudEvents over HTTP, both directions, strictly.
 *
 * The SDK's `HTTP.toEvent` is lenient in ways a function server cannot be: it invents an `id`
 * and `time` when they are missing, defaults `specversion`, picks a data parser only for an
 * exact `application/json` content type (so `application/json; charset=utf-8` data stays a
 * string), and quotes non-JSON text into a JSON string. So the envelope and the data are
 * checked here first, the SDK builds the event, and `validate()` has the last word.
 */

/** Headers as Node gives them (lower-case names) or as plain strings. */
export type HeaderRecord = Record<string, string | string[] | number | undefined>;

export type ParsedMessage =
  | { ok: true; event: CloudEvent<unknown>; mode: 'binary' | 'structured' }
  | { ok: false; reason: string; message: string };

const requiredAttributes = ['id', 'source', 'type', 'specversion'] as const;

function header(headers: HeaderRecord, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

const failure = (reason: string, message: string): ParsedMessage => ({ ok: false, reason, message });

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeUtf8(body: Uint8Array): string | undefined {
  try {
    return utf8.decode(body);
  } catch {
    return undefined;
  }
}

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

function missingAttribute(attributes: Record<string, unknown>, mode: string): ParsedMessage | undefined {
  for (const name of requiredAttributes) {
    const value = attributes[name];
    if (typeof value !== 'string' || value === '') {
      return failure(
        'MissingAttribute',
        `The ${mode}-mode CloudEvent has no '${name}' attribute (required: id, source, type, specversion)`,
      );
    }
  }
  if (attributes.specversion !== '1.0') {
    return failure(
      'UnsupportedSpecVersion',
      `CloudEvents specversion '${String(attributes.specversion)}' is not supported (only 1.0)`,
    );
  }
  return undefined;
}

function parseStructured(body: Uint8Array): ParsedMessage {
  const text = decodeUtf8(body);
  if (text === undefined) return failure('MalformedEvent', 'The structured CloudEvent is not valid UTF-8');
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return failure(
      'MalformedEvent',
      `The structured CloudEvent is not valid JSON: ${describeError(error).message}`,
    );
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    return failure('MalformedEvent', 'The structured CloudEvent is not a JSON object');
  }
  const attributes = document as Record<string, unknown>;
  const missing = missingAttribute(attributes, 'structured');
  if (missing) return missing;
  let data: unknown = attributes.data;
  const envelopeAttributes = { ...attributes };
  delete envelopeAttributes.data;
  if ('data_base64' in attributes) {
    // Decoded here: the SDK turns data_base64 into a Uint32Array, which breaks on most lengths.
    if (typeof attributes.data_base64 !== 'string') {
      return failure('MalformedEvent', 'data_base64 of the structured CloudEvent is not a string');
    }
    data = new Uint8Array(Buffer.from(attributes.data_base64, 'base64'));
    delete envelopeAttributes.data_base64;
  }
  return build(
    () =>
      HTTP.toEvent({
        headers: { 'content-type': 'application/cloudevents+json' },
        body: envelopeAttributes,
      }) as CloudEvent<unknown>,
    data,
    'structured',
  );
}

/**
 * The SDK maps the envelope; the data checked here goes in after, and the strict constructor
 * validates attribute names, extension values and the JSON schema of the spec.
 */
function build(
  envelope: () => CloudEvent<unknown>,
  data: unknown,
  mode: 'binary' | 'structured',
): ParsedMessage {
  try {
    const {
      data: _ignored,
      data_base64: _ignored64,
      ...attributes
    } = envelope().toJSON() as Record<string, unknown>;
    const event = new CloudEvent<unknown>({ ...attributes, ...(data === undefined ? {} : { data }) });
    return { ok: true, event, mode };
  } catch (error) {
    return failure('InvalidEvent', `Invalid CloudEvent: ${describeValidation(error)}`);
  }
}

function parseBinary(headers: HeaderRecord, body: Uint8Array): ParsedMessage {
  const attributes: Record<string, unknown> = {
    id: header(headers, 'ce-id'),
    source: header(headers, 'ce-source'),
    type: header(headers, 'ce-type'),
    specversion: header(headers, 'ce-specversion'),
  };
  const missing = missingAttribute(attributes, 'binary');
  if (missing) return missing;
  const contentType = header(headers, 'content-type');
  const mediaType = mediaTypeOf(contentType);
  let data: unknown;
  if (body.length > 0) {
    if (isJsonMediaType(mediaType)) {
      const text = decodeUtf8(body);
      if (text === undefined) return failure('DataNotJson', 'The event data is not valid UTF-8 JSON');
      try {
        data = JSON.parse(text);
      } catch (error) {
        return failure(
          'DataNotJson',
          `The event data is not valid JSON (content type ${contentType ?? 'absent, meaning JSON'}): ${
            describeError(error).message
          }`,
        );
      }
    } else if (mediaType.startsWith('text/')) {
      const text = decodeUtf8(body);
      if (text === undefined)
        return failure('MalformedEvent', `The ${mediaType} event data is not valid UTF-8`);
      data = text;
    } else {
      data = new Uint8Array(body);
    }
  }
  const plainHeaders: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const text = header(headers, name);
    if (text !== undefined && value !== undefined) plainHeaders[name.toLowerCase()] = text;
  }
  // No body given to the SDK: it only maps headers to attributes.
  return build(
    () => HTTP.toEvent({ headers: plainHeaders, body: undefined }) as CloudEvent<unknown>,
    data,
    'binary',
  );
}

/**
 * Reads one CloudEvent from an HTTP message (request or response): binary mode (ce-* headers)
 * or structured mode (application/cloudevents+json). Batch mode is refused.
 */
export function parseHttpEvent(headers: HeaderRecord, body: Uint8Array): ParsedMessage {
  const lowered: HeaderRecord = {};
  for (const [name, value] of Object.entries(headers)) lowered[name.toLowerCase()] = value;
  const mediaType = mediaTypeOf(header(lowered, 'content-type'));
  if (mediaType.startsWith('application/cloudevents-batch')) {
    return failure(
      'BatchNotSupported',
      'Batched CloudEvents (application/cloudevents-batch+json) are not accepted',
    );
  }
  if (mediaType.startsWith('application/cloudevents')) {
    if (mediaType !== 'application/cloudevents+json') {
      return failure(
        'UnsupportedEventFormat',
        `CloudEvents format ${mediaType} is not supported (only JSON)`,
      );
    }
    return parseStructured(body);
  }
  if (Object.keys(lowered).some((name) => name.startsWith('ce-'))) return parseBinary(lowered, body);
  return failure(
    'NotACloudEvent',
    'The request is not a CloudEvent: no ce-* headers (binary mode) and Content-Type is not application/cloudevents+json (structured mode)',
  );
}

/** True when the response/request looks like it carries a CloudEvent (used for replies). */
export function looksLikeCloudEvent(headers: HeaderRecord): boolean {
  const lowered = Object.keys(headers).map((name) => name.toLowerCase());
  if (lowered.includes('ce-id') || lowered.includes('ce-specversion')) return true;
  const contentType = Object.entries(headers).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  return mediaTypeOf(contentType === undefined ? undefined : String(contentType)).startsWith(
    'application/cloudevents',
  );
}

export interface HttpMessage {
  headers: Record<string, string>;
  body: string | Uint8Array;
}

/**
 * Encodes an event for HTTP: binary mode (ce-* headers, data as the body) or structured mode.
 * JSON data is always JSON-encoded (the SDK sends a string datum raw, which is not JSON).
 */
export function encodeHttpEvent(
  event: CloudEvent<unknown>,
  mode: 'binary' | 'structured' = 'binary',
): HttpMessage {
  if (mode === 'structured') {
    const message = HTTP.structured(event);
    return { headers: stringHeaders(message.headers), body: String(message.body) };
  }
  const message = HTTP.binary(event);
  const headers = stringHeaders(message.headers);
  let body: string | Uint8Array;
  if (event.data === undefined || event.data === null) body = '';
  else if (ArrayBuffer.isView(event.data)) {
    const view = event.data as ArrayBufferView;
    body = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  } else if (isJsonMediaType(mediaTypeOf(event.datacontenttype))) body = JSON.stringify(event.data);
  else body = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
  if (body === '' && event.datacontenttype === undefined) delete headers['content-type'];
  return { headers, body };
}

function stringHeaders(headers: Record<string, unknown>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && value !== null) result[name.toLowerCase()] = String(value);
  }
  return result;
}
