import { CloudEvent } from 'cloudevents';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { envInt, envString } from '../../../shared/config.js';
import { BpaError, invalid, transient } from '../../../shared/errors.js';
import { createLogger, type Logger } from '../../../shared/log.js';
import { counterSpec } from '../../../shared/telemetry/metrics.js';
import type { FunctionContext, FunctionDefinition } from '../../../shared/server/types.js';

/** The server must never touch Kubernetes itself: any property access on this fails the test. */
export const untouchableKubeConfig = new Proxy(
  {},
  {
    get(_target, property) {
      if (property === 'then') return undefined;
      throw new Error(`the function server touched the KubeConfig (${String(property)})`);
    },
  },
) as unknown as KubeConfig;

export const greetType = 'test.greet';
export const silentType = 'test.silent';
export const failType = 'test.fail';
export const slowType = 'test.slow';
export const badReplyType = 'test.bad-reply';
export const sendType = 'test.send';

export const greetingsCounted = counterSpec({
  name: 'test_greetings_total',
  help: 'Greetings sent by the test function',
  labelNames: ['language'],
});

export const testConfigSchema = z.object({
  GREETING: envString('hello'),
  REPEAT: envInt(1, { min: 1, max: 3 }),
});
export type TestConfig = z.infer<typeof testConfigSchema>;

/** A gate a test opens to let a slow handler finish. */
export interface Gate {
  entered: Promise<void>;
  open(): void;
}
export function createGate(): Gate & { wait(): Promise<void>; enter(): void } {
  let enter!: () => void;
  let open!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { entered, open, enter, wait: () => opened };
}

export interface TestFunctionProbe {
  /** Contexts seen by the handler, in order. */
  contexts: FunctionContext<TestConfig>[];
  events: CloudEvent<unknown>[];
  slowGate?: ReturnType<typeof createGate>;
}

/**
 * A tiny function covering every path of the server: a reply, no reply, thrown errors of
 * each kind, a slow handler, an invalid reply, and context.send().
 */
export function testFunction(probe: TestFunctionProbe): FunctionDefinition<TestConfig> {
  return {
    name: 'test-fn',
    accepts: {
      [greetType]: z.object({ name: z.string().min(1), language: z.enum(['en', 'fr']).optional() }),
      [silentType]: z.unknown(),
      [failType]: z.object({ kind: z.enum(['invalid', 'transient', 'resolution', 'internal', 'plain']) }),
      [slowType]: z.unknown(),
      [badReplyType]: z.unknown(),
      [sendType]: z.object({ count: z.number().int().min(1) }),
    },
    configSchema: testConfigSchema,
    metrics: [greetingsCounted],
    handle: async (context, event) => {
      probe.contexts.push(context);
      probe.events.push(event);
      context.log.info('handling');
      switch (event.type) {
        case greetType: {
          const data = event.data as { name: string; language?: string };
          context.metrics?.counter(greetingsCounted).inc({ language: data.language ?? 'en' });
          return new CloudEvent({
            type: 'test.greeted',
            source: '/bpa-functions/test-fn',
            subject: event.subject,
            datacontenttype: 'application/json',
            data: { greeting: `${context.config.GREETING.repeat(context.config.REPEAT)} ${data.name}` },
          });
        }
        case silentType:
          return undefined;
        case failType: {
          const { kind } = event.data as { kind: string };
          if (kind === 'invalid') throw invalid('BadInput', 'the input is wrong');
          if (kind === 'transient') throw transient('ApiUnavailable', 'the API server is down');
          if (kind === 'resolution') throw new BpaError('HostNotFound', 'Host with MAC Address x not found');
          if (kind === 'internal') throw new BpaError('Bug', 'unexpected state', 'internal');
          throw new Error('plain failure');
        }
        case slowType:
          probe.slowGate?.enter();
          await probe.slowGate?.wait();
          return undefined;
        case badReplyType:
          return { not: 'a CloudEvent' } as unknown as CloudEvent;
        case sendType: {
          const { count } = event.data as { count: number };
          for (let index = 0; index < count; index += 1) {
            await context.send(
              new CloudEvent({ type: 'test.sent', source: '/bpa-functions/test-fn', data: { index } }),
            );
          }
          return undefined;
        }
        default:
          throw new Error(`unexpected type ${event.type}`);
      }
    },
  };
}

/** A logger that keeps every line, parsed. */
export function capturingLogger(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line)) });
  return { log, lines };
}
