import type { CloudEvent } from 'cloudevents';

/** Log fields that identify an event and the resource it is about. */
export interface EventLogFields {
  ce_id: string;
  ce_type: string;
  ce_subject?: string;
  namespace?: string;
  name?: string;
}

// `namespaces/<ns>/<plural>/<name>` (chain events) or `/apis/<group>/<v>/namespaces/...` (ApiServerSource).
const subjectPattern = /(?:^|\/)namespaces\/([^/]+)\/[^/]+\/([^/]+)$/;

/**
 * The fields every log line of a request carries. The resource comes from the ApiServerSource
 * extensions `namespace`/`name` when present, else from a `namespaces/<ns>/<plural>/<name>` subject.
 */
export function eventLogFields(event: CloudEvent<unknown>): EventLogFields {
  const fields: EventLogFields = { ce_id: event.id, ce_type: event.type };
  if (event.subject) fields.ce_subject = event.subject;
  const namespace = event['namespace'];
  const name = event['name'];
  if (typeof namespace === 'string' && typeof name === 'string') {
    fields.namespace = namespace;
    fields.name = name;
  } else if (event.subject) {
    const match = subjectPattern.exec(event.subject);
    if (match) {
      fields.namespace = match[1]!;
      fields.name = match[2]!;
    }
  }
  return fields;
}
