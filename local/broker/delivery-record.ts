/**
 * One line per delivery attempt, for the console, a live view and tests. Never carries data.
 * - delivered: the subscriber accepted the event (2xx);
 * - retry: this attempt failed and another follows;
 * - dead-lettered: attempts are exhausted (or the failure is final) and the dead-letter sink took it;
 * - dropped: the event is gone: final failure without (or with a failing) dead-letter sink, or a
 *   reply refused by the broker (TTL exhausted).
 */
export type DeliveryOutcome = 'delivered' | 'retry' | 'dead-lettered' | 'dropped';

export interface DeliveryRecord {
  /** `<namespace>/<broker>`. */
  broker: string;
  trigger: string;
  triggerNamespace: string;
  eventType: string;
  eventId: string;
  subject?: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** HTTP status; null for connection errors and timeouts. */
  status: number | null;
  latencyMs: number;
  outcome: DeliveryOutcome;
  /** Why an attempt failed or the event was dropped, when it did. */
  reason?: string;
  /** The subscriber URL this attempt went to. */
  target: string;
  /** True when the subscriber answered with a CloudEvent that re-entered the broker. */
  replied?: boolean;
}

/** Events the running broker emits. */
export interface BrokerEvents {
  delivery: [DeliveryRecord];
}
