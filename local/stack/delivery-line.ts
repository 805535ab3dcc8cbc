import type { DeliveryRecord } from '../broker/delivery-record.js';

/** Shortens the project's and Knative's long type prefixes for one-line display. */
export function shortEventType(type: string): string {
  return type.replace(/^org\.akraino\.icn\.bpa\./, '').replace(/^dev\.knative\./, 'knative.');
}

/**
 * One console line per delivery attempt: type, subject, trigger, status, latency, e.g.
 * `event  inventory.rendered  namespaces/demo/provisionings/edge-1 → kud-job-launch-inventory-rendered  200  41 ms`.
 */
export function formatDeliveryLine(record: DeliveryRecord): string {
  const status = record.status === null ? 'no answer' : String(record.status);
  const outcome =
    record.outcome === 'delivered' ? '' : `  ${record.outcome}${record.reason ? `: ${record.reason}` : ''}`;
  const attempt = record.attempt > 1 ? ` (attempt ${record.attempt})` : '';
  return (
    `event  ${shortEventType(record.eventType)}  ${record.subject ?? '-'} → ${record.trigger}  ` +
    `${status}  ${Math.round(record.latencyMs)} ms${attempt}${outcome}`
  );
}
