import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { invalid } from '../../shared/errors.js';
import { createLogger, type Logger } from '../../shared/log.js';
import type { RawEvent } from '../../shared/cloudevents/http-codec.js';
import { resolveDestination, type RefResolver } from '../broker/load-config.js';
import { cronMatches, parseCron, type CronSchedule } from './cron.js';
import { SinkSender, type SendResult } from './sink-sender.js';
import { pingSourceSchema, sourcesOfKind, type PingSourceObject } from './source-objects.js';

export const pingEventType = 'dev.knative.sources.ping';
/** Knative's PingSource `source` attribute. */
export const pingSourceUri = (namespace: string, name: string) =>
  `/apis/v1/namespaces/${namespace}/pingsources/${name}`;

export interface PingEmission {
  source: string;
  eventId: string;
  sink: string;
  result: SendResult;
}

export interface StartPingSourcesOptions {
  objects: readonly unknown[];
  resolveRef: RefResolver;
  /** Fire every N ms instead of the cron schedule (tests, the demo). */
  intervalMs?: number;
  defaultNamespace?: string;
  log?: Logger;
  onEmit?: (emission: PingEmission) => void;
}

export interface RunningPingSources {
  /** Sends one ping from every source now (or only from `name`); resolves with the results. */
  trigger(name?: string): Promise<PingEmission[]>;
  stop(): Promise<void>;
}

/** The event a PingSource sends: type, source, optional content type and data. */
export function makePingEvent(source: PingSourceObject, namespace: string, time = new Date()): RawEvent {
  const { spec } = source;
  const attributes: Record<string, string> = {
    specversion: '1.0',
    id: randomUUID(),
    source: pingSourceUri(namespace, source.metadata.name),
    type: pingEventType,
    time: time.toISOString(),
    ...(spec.contentType ? { datacontenttype: spec.contentType } : {}),
    ...(spec.ceOverrides?.extensions ?? {}),
  };
  if (spec.dataBase64 !== undefined) return { attributes, data: Buffer.from(spec.dataBase64, 'base64') };
  if (spec.data !== undefined && spec.data !== '')
    return { attributes, data: Buffer.from(spec.data, 'utf8') };
  return { attributes };
}

/** Runs the PingSources in `objects`: on their cron schedule (checked each minute) or every `intervalMs`. */
export async function startPingSources(options: StartPingSourcesOptions): Promise<RunningPingSources> {
  const log = options.log ?? createLogger({ base: { component: 'pingsource' } });
  const sender = new SinkSender();
  const entries: { source: PingSourceObject; namespace: string; sinkUrl: string; schedule?: CronSchedule }[] =
    [];
  for (const object of sourcesOfKind(options.objects, 'PingSource')) {
    const result = pingSourceSchema.safeParse(object);
    if (!result.success) {
      const name = (object as { metadata?: { name?: string } }).metadata?.name ?? '?';
      const issues = (result.error as z.ZodError).issues
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .join('; ');
      throw invalid('InvalidKnativeObject', `PingSource ${name}: ${issues}`);
    }
    const source = result.data;
    const namespace = source.metadata.namespace ?? options.defaultNamespace ?? 'default';
    const schedule = source.spec.schedule ?? '* * * * *';
    entries.push({
      source,
      namespace,
      sinkUrl: await resolveDestination(source.spec.sink, namespace, options.resolveRef),
      schedule: parseCron(schedule, source.spec.timezone),
    });
  }

  const fire = async (entry: (typeof entries)[number], time = new Date()): Promise<PingEmission> => {
    const event = makePingEvent(entry.source, entry.namespace, time);
    const result = await sender.send(entry.sinkUrl, event);
    if (!result.ok)
      log.warn('ping dropped: the sink did not accept it', {
        source: event.attributes.source,
        status: result.status,
      });
    const emission = {
      source: event.attributes.source!,
      eventId: event.attributes.id!,
      sink: entry.sinkUrl,
      result,
    };
    options.onEmit?.(emission);
    return emission;
  };

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  if (entries.length > 0) {
    if (options.intervalMs !== undefined) {
      timer = setInterval(() => entries.forEach((entry) => void fire(entry)), options.intervalMs);
    } else {
      const tick = () => {
        if (stopped) return;
        const now = new Date();
        for (const entry of entries)
          if (entry.schedule && cronMatches(entry.schedule, now)) void fire(entry, now);
        timer = setTimeout(tick, 60_000 - (Date.now() % 60_000) + 5);
      };
      timer = setTimeout(tick, 60_000 - (Date.now() % 60_000) + 5);
    }
  }

  return {
    trigger: (name) =>
      Promise.all(entries.filter((e) => !name || e.source.metadata.name === name).map((e) => fire(e))),
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      sender.close();
    },
  };
}
