import type { IncomingHttpHeaders } from 'node:http';
import { CloudEvent, HTTP } from 'cloudevents';
import type { StoredCloudEvent } from './timeline-event.js';

/**
 * Reads a CloudEvent POSTed to the live view (binary or structured). This is how the page
 * sees events' contents: a Trigger with an empty filter whose subscriber is the live view's
 * `/api/cloudevents` URL (the embedded stack adds one; on a cluster you apply one). Throws
 * when the body is not a valid CloudEvent.
 */
export function cloudEventFromRequest(
  headers: IncomingHttpHeaders,
  body: string,
): { id: string; type: string; source: string; subject?: string } & StoredCloudEvent {
  const received: unknown = HTTP.toEvent({ headers: headers as Record<string, string>, body });
  const event = Array.isArray(received) ? (received[0] as unknown) : received;
  if (!(event instanceof CloudEvent)) throw new Error('no CloudEvent in the request');
  // toEvent does not validate: an envelope without id/source/type must be refused here.
  event.validate();
  const { data, data_base64: _dataBase64, ...attributes } = event.toJSON() as Record<string, unknown>;
  return {
    id: event.id,
    type: event.type,
    source: event.source,
    ...(event.subject ? { subject: event.subject } : {}),
    attributes,
    data,
  };
}
