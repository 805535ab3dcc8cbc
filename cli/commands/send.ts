import { readFile } from 'node:fs/promises';
import { CloudEvent } from 'cloudevents';
import { isJsonMediaType, mediaTypeOf } from '../../shared/cloudevents/media-types.js';
import { postEvent, SinkUnreachableError, type SinkResponse } from '../../shared/cloudevents/sink-client.js';
import type { CliCommand, CliIO } from '../command.js';
import { UsageError } from '../command.js';
import { parseFlags } from '../flags.js';

const usage = `Usage: bpa send --to URL --type TYPE [options]

Post one CloudEvent by hand to a broker or a function, and print the response.

Options:
  --to URL              where to POST: a broker ingress (http://127.0.0.1:PORT/<namespace>/<broker>)
                        or a function (http://127.0.0.1:PORT/)
  --type TYPE           the event type, e.g. org.akraino.icn.bpa.hosts.resolved
  --source SOURCE       the event source (default: bpa-cli)
  --subject SUBJECT     the event subject, e.g. namespaces/default/provisionings/cluster-a
  --data JSON|@FILE     the event data: inline JSON, or @ and a file name to read it from
                        (no data: the event has none)
  --content-type TYPE   datacontenttype of the data (default: application/json). With a JSON type
                        the data must be valid JSON; any other type sends it as is
  --structured          send in structured mode (one application/cloudevents+json document)
                        instead of binary mode (ce-* headers, data as the body)
  --extension NAME=VALUE
                        an extension attribute, repeatable; names are lower-case letters and
                        digits, e.g. --extension cluster=cluster-a. --extension traceparent=...
                        joins an existing trace
  --id ID               the event id (default: a fresh UUID)
  --timeout SECONDS     give up waiting for the response after this long (default: 30)
  --token-file FILE     send the token in FILE as "Authorization: Bearer <token>": a Broker with
                        Knative's authentication-oidc on answers 401 without one, 403 to an identity
                        no EventPolicy names (docs/knative.md "Event authorization"), e.g.
                        kubectl create token bpa-sender -n bpa-system \\
                          --audience eventing.knative.dev/broker/bpa-system/default > token
  -h, --help            show this help

Output: the first line is "HTTP <status> <text>". When the response carries a CloudEvent (a
function's reply), its attributes follow, one "name: value" per line in name order, then its data
(JSON pretty-printed); otherwise the response body as received.

Exit status: 0 for a 2xx response; 1 for any other status (the response on stdout, and one line
on stderr: the status and the error's reason and message) or when the URL cannot be reached (the
reason on stderr); 2 for bad options or an unreadable --data or --token-file file.

Examples:
  bpa send --to http://127.0.0.1:8080/ --type dev.knative.sources.ping --data '{}'
  bpa send --to http://127.0.0.1:8080/default/default \\
    --type org.akraino.icn.bpa.cluster.ready --subject namespaces/default/provisionings/cluster-a \\
    --extension cluster=cluster-a --data @cluster-ready.json
`;

interface SendOptions {
  to: string;
  type: string;
  source: string;
  subject?: string;
  id?: string;
  data?: string | Uint8Array;
  contentType: string;
  structured: boolean;
  extensions: Record<string, string>;
  timeoutMs: number;
  tokenFile?: string;
}

function parseOptions(argv: string[]): Omit<SendOptions, 'data'> & { dataArgument?: string } {
  const values = parseFlags(argv, {
    to: { type: 'string' },
    type: { type: 'string' },
    source: { type: 'string' },
    subject: { type: 'string' },
    data: { type: 'string' },
    'content-type': { type: 'string' },
    structured: { type: 'boolean' },
    extension: { type: 'string', multiple: true },
    id: { type: 'string' },
    timeout: { type: 'string' },
    'token-file': { type: 'string' },
  });
  if (!values.to) throw new UsageError('--to URL is required');
  if (!values.type) throw new UsageError('--type TYPE is required');
  let url: URL;
  try {
    url = new URL(values.to);
  } catch {
    throw new UsageError(`--to ${values.to} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--to ${values.to} is not an http(s) URL`);
  }
  const extensions: Record<string, string> = {};
  for (const entry of values.extension ?? []) {
    const equals = entry.indexOf('=');
    if (equals <= 0) throw new UsageError(`--extension ${entry}: expected NAME=VALUE`);
    const name = entry.slice(0, equals);
    if (!/^[a-z0-9]+$/.test(name)) {
      throw new UsageError(`--extension ${entry}: the name must be lower-case letters and digits only`);
    }
    extensions[name] = entry.slice(equals + 1);
  }
  const timeoutSeconds = values.timeout === undefined ? 30 : Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    throw new UsageError(`--timeout ${values.timeout}: expected a positive number of seconds`);
  }
  return {
    to: values.to,
    type: values.type,
    source: values.source ?? 'bpa-cli',
    ...(values.subject === undefined ? {} : { subject: values.subject }),
    ...(values.id === undefined ? {} : { id: values.id }),
    ...(values.data === undefined ? {} : { dataArgument: values.data }),
    contentType: values['content-type'] ?? 'application/json',
    structured: values.structured ?? false,
    extensions,
    timeoutMs: timeoutSeconds * 1000,
    ...(values['token-file'] === undefined ? {} : { tokenFile: values['token-file'] }),
  };
}

/** `Authorization: Bearer <token>` from --token-file: a file that is missing or empty is a usage error. */
async function readAuthorization(tokenFile: string | undefined): Promise<Record<string, string>> {
  if (tokenFile === undefined) return {};
  let token: string;
  try {
    token = (await readFile(tokenFile, 'utf8')).trim();
  } catch (error) {
    throw new UsageError(`cannot read --token-file ${tokenFile}: ${(error as Error).message}`);
  }
  if (!token) throw new UsageError(`--token-file ${tokenFile} is empty`);
  return { authorization: `Bearer ${token}` };
}

/** Reads --data (inline or @file) and, for a JSON content type, parses it. */
async function readData(argument: string, contentType: string): Promise<unknown> {
  let raw: string | Buffer = argument;
  if (argument.startsWith('@')) {
    const file = argument.slice(1);
    try {
      raw = await readFile(file);
    } catch (error) {
      throw new UsageError(`cannot read --data file ${file}: ${(error as Error).message}`);
    }
  }
  const mediaType = mediaTypeOf(contentType);
  if (isJsonMediaType(mediaType)) {
    try {
      return JSON.parse(raw.toString('utf8'));
    } catch (error) {
      throw new UsageError(
        `--data is not valid JSON (${(error as Error).message}); pass --content-type for other data`,
      );
    }
  }
  if (typeof raw === 'string' || mediaType.startsWith('text/')) return raw.toString();
  return new Uint8Array(raw);
}

function buildEvent(options: Omit<SendOptions, 'data'>, data: unknown): CloudEvent<unknown> {
  try {
    return new CloudEvent<unknown>({
      ...options.extensions,
      specversion: '1.0',
      type: options.type,
      source: options.source,
      ...(options.subject === undefined ? {} : { subject: options.subject }),
      ...(options.id === undefined ? {} : { id: options.id }),
      ...(data === undefined ? {} : { datacontenttype: options.contentType, data }),
    });
  } catch (error) {
    throw new UsageError(`not a valid CloudEvent: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** Data as people read it: pretty JSON, text as is, bytes as base64. */
function formatData(event: CloudEvent<unknown>): string {
  const data = event.data;
  if (ArrayBuffer.isView(data)) return `(${data.byteLength} bytes, base64) ${event.data_base64 ?? ''}`;
  if (typeof data === 'string' && !isJsonMediaType(mediaTypeOf(event.datacontenttype))) return data;
  return JSON.stringify(data, null, 2);
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');

/** The printed form of a response (stdout). */
export function formatResponse(response: SinkResponse): string {
  const lines = [`HTTP ${response.status} ${response.statusText}`.trimEnd()];
  const event = response.replyEvent;
  if (event) {
    lines.push('Context Attributes,');
    const attributes = Object.entries(event.toJSON() as Record<string, unknown>)
      .filter(([name, value]) => name !== 'data' && name !== 'data_base64' && value !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [name, value] of attributes) lines.push(`  ${name}: ${String(value)}`);
    if (event.data !== undefined) {
      lines.push('Data,');
      lines.push(indent(formatData(event)));
    }
  } else if (response.body.length > 0) {
    lines.push(formatBody(response));
  }
  return lines.join('\n') + '\n';
}

function formatBody(response: SinkResponse): string {
  const text = response.body.toString('utf8');
  if (isJsonMediaType(mediaTypeOf(response.headers['content-type'])) && response.headers['content-type']) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  }
  return text.replace(/\n$/, '');
}

async function send(argv: string[], io: CliIO): Promise<number> {
  const { dataArgument, ...options } = parseOptions(argv);
  const data = dataArgument === undefined ? undefined : await readData(dataArgument, options.contentType);
  const headers = await readAuthorization(options.tokenFile);
  const event = buildEvent(options, data);
  let response: SinkResponse;
  try {
    response = await postEvent(options.to, event, {
      structured: options.structured,
      timeoutMs: options.timeoutMs,
      headers,
    });
  } catch (error) {
    if (error instanceof SinkUnreachableError) {
      io.stderr(`bpa send: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  io.stdout(formatResponse(response));
  if (response.replyError) {
    io.stderr(
      `bpa send: the response looks like a CloudEvent but is not a valid one: ${response.replyError}\n`,
    );
  }
  const ok = response.status >= 200 && response.status <= 299;
  if (!ok) io.stderr(`bpa send: ${refusalLine(options.to, response)}\n`);
  return ok ? 0 : 1;
}

/**
 * One line for stderr saying why a non-2xx answer failed: who answered what, and the
 * `{error: {reason, message}}` of the project's servers (else the body's first line), so a
 * script's log shows the cause without the response printed above it.
 */
export function refusalLine(to: string, response: SinkResponse): string {
  const head = `${to} answered HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  const text = response.body.toString('utf8');
  let detail: string | undefined;
  try {
    const error = (JSON.parse(text) as { error?: { reason?: unknown; message?: unknown } }).error;
    if (typeof error?.reason === 'string')
      detail = `${error.reason}${typeof error.message === 'string' ? `: ${error.message}` : ''}`;
  } catch {
    // not JSON: the body's first line, if any
  }
  detail ??= text.split('\n').find((line) => line.trim() !== '');
  const oneLine = detail?.replace(/\s+/g, ' ').trim().slice(0, 300);
  const meaning =
    response.status >= 500
      ? ' (the server failed)'
      : response.status >= 400
        ? ' (the request was refused)'
        : '';
  return `${head}${meaning}${oneLine ? `: ${oneLine}` : ''}`;
}

export const sendCommand: CliCommand = {
  name: 'send',
  usage,
  run: send,
};
