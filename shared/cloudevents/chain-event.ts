import { CloudEvent } from 'cloudevents';
import type { z } from 'zod';
import { BpaError } from '../errors.js';
import { chainEventDataSchemas, eventSource, type ChainEventType } from '../events/types.js';

export interface ChainEventOptions {
  /** Cluster name: the `cluster` extension Triggers filter on. */
  cluster: string;
  /** Fixed id (tests); default a fresh UUID. */
  id?: string;
  /** Fixed time (tests); default now. */
  time?: string;
}

/** The data a chain event type carries, as its schema accepts it. */
export type ChainEventData<T extends ChainEventType> = z.input<(typeof chainEventDataSchemas)[T]>;

/**
 * Builds one of the chain's own events (contract section 9): source `/bpa-functions/<function>`,
 * the given subject (`namespaces/<ns>/provisionings/<name>` or `.../softwares/<name>`),
 * extension `cluster`, JSON data checked against the type's schema. A data mismatch is a bug in
 * the emitting function, so it throws an `internal` BpaError instead of sending a bad event.
 */
export function chainEvent<T extends ChainEventType>(
  type: T,
  functionName: string,
  subject: string,
  data: ChainEventData<T>,
  options: ChainEventOptions,
): CloudEvent<z.output<(typeof chainEventDataSchemas)[T]>> {
  const schema = chainEventDataSchemas[type] as z.ZodType;
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const where = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(data)'}: ${issue.message}`)
      .join('; ');
    throw new BpaError(
      'InvalidChainEvent',
      `${functionName} built an invalid ${type} event: ${where}`,
      'internal',
    );
  }
  return new CloudEvent({
    specversion: '1.0',
    type,
    source: eventSource(functionName),
    subject,
    datacontenttype: 'application/json',
    data: parsed.data as z.output<(typeof chainEventDataSchemas)[T]>,
    cluster: options.cluster,
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(options.time === undefined ? {} : { time: options.time }),
  });
}
