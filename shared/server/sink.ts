import type { CloudEvent } from 'cloudevents';
import { BpaError } from '../errors.js';
import { postEventWithRetry } from '../cloudevents/sink-client.js';

/**
 * Posts `event` to the sink (K_SINK / BROKER_URL) with retries and resolves to the HTTP status;
 * rejects `NoSinkConfigured` without a sink and `SinkRejected` on a non-2xx answer. Shared by
 * the server's `context.send` and the faas-js-runtime adapter.
 */
export async function postToSink(
  functionName: string,
  sinkUrl: string | undefined,
  event: CloudEvent<unknown>,
  headers: Record<string, string> = {},
): Promise<number> {
  if (!sinkUrl) {
    throw new BpaError(
      'NoSinkConfigured',
      `${functionName} cannot send ${event.type}: neither K_SINK nor BROKER_URL is set`,
      'internal',
    );
  }
  const response = await postEventWithRetry(sinkUrl, event, { headers });
  if (response.status < 200 || response.status > 299) {
    throw new BpaError(
      'SinkRejected',
      `The sink ${sinkUrl} answered HTTP ${response.status} to ${event.type} ${event.id}`,
      'transient',
    );
  }
  return response.status;
}
