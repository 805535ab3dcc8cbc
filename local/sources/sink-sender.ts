import { encodeBinary, type RawEvent } from '../../shared/cloudevents/http-codec.js';
import { createAgents, destroyAgents, postMessage, type Agents } from '../broker/http-sender.js';
import { sleep } from '../broker/concurrency.js';

/**
 * How Knative's source adapters send (cloudevents sdk-go `doWithRetry` with the adapter's
 * RetryParams: exponential, period 50 ms, 5 tries): binary mode; retried only on connection
 * errors and HTTP 404, 413, 425, 429, 502, 503, 504 (not 500); the waits are 50·2^n ms for
 * n = 1..5 (100, 200, 400, 800, 1600 ms); then the event is given up.
 */
export const sourceRetryStatuses = new Set([404, 413, 425, 429, 502, 503, 504]);
export const sourceMaxRetries = 5;
export const sourceRetryPeriodMs = 50;

export interface SendResult {
  ok: boolean;
  /** Last HTTP status, or null when the last attempt failed to connect. */
  status: number | null;
  attempts: number;
  error?: string;
}

export class SinkSender {
  private readonly agents: Agents = createAgents(32);
  private readonly shutdown = new AbortController();

  async send(sinkUrl: string, event: RawEvent): Promise<SendResult> {
    const message = encodeBinary(event);
    const target = new URL(sinkUrl);
    let last: SendResult = { ok: false, status: null, attempts: 0 };
    for (let retry = 0; retry <= sourceMaxRetries; retry++) {
      if (retry > 0 && !(await sleep(sourceRetryPeriodMs * 2 ** retry, this.shutdown.signal))) break;
      const outcome = await postMessage(
        target,
        { headers: message.headers, body: message.body, signal: this.shutdown.signal },
        this.agents,
      );
      if (outcome.kind === 'error') {
        last = { ok: false, status: null, attempts: retry + 1, error: outcome.message };
        continue;
      }
      const ok = outcome.status >= 200 && outcome.status < 300;
      last = { ok, status: outcome.status, attempts: retry + 1 };
      if (ok || !sourceRetryStatuses.has(outcome.status)) return last;
    }
    return last;
  }

  close(): void {
    this.shutdown.abort();
    destroyAgents(this.agents);
  }
}
