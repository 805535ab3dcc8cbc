import type { CloudEvent } from 'cloudevents';
import { BpaError } from '../errors.js';
import { postEventWithRetry } from '../cloudevents/sink-client.js';

/** Where a function's own events go (`context.send`), and how it proves who it is there. */
export interface Sink {
  /** K_SINK (a SinkBinding's), else BROKER_URL; undefined when neither is set. */
  url: string | undefined;
  /**
   * SINK_TOKEN_FILE: the bearer token sent with each event, read on each send (absent file: none).
   * Knative mounts the SinkBinding's OIDC token there when Eventing's authentication-oidc is on.
   */
  tokenFile?: string;
}

/**
 * Posts `event` to the sink with retries and resolves to the HTTP status; rejects
 * `NoSinkConfigured` without a sink and `SinkRejected` on a non-2xx answer. Shared by the
 * server's `context.send` and the faas-js-runtime adapter.
 */
export async function postToSink(
  functionName: string,
  sink: Sink,
  event: CloudEvent<unknown>,
  headers: Record<string, string> = {},
): Promise<number> {
  if (!sink.url) {
    throw new BpaError(
      'NoSinkConfigured',
      `${functionName} cannot send ${event.type}: neither K_SINK nor BROKER_URL is set`,
      'internal',
    );
  }
  const response = await postEventWithRetry(sink.url, event, {
    headers,
    ...(sink.tokenFile ? { tokenFile: sink.tokenFile } : {}),
  });
  if (response.status < 200 || response.status > 299) {
    throw new BpaError(
      'SinkRejected',
      `The sink ${sink.url} answered HTTP ${response.status} to ${event.type} ${event.id}`,
      'transient',
    );
  }
  return response.status;
}
