import { silentLogger } from '../../../shared/log.js';
import { startPingSources } from '../../../local/sources/index.js';
import { parseCron, cronMatches } from '../../../local/sources/cron.js';
import { startSubscriber } from '../../unit/broker/support/recording-subscriber.js';

const pingSource = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'sources.knative.dev/v1',
  kind: 'PingSource',
  metadata: { name, namespace: 'bpa-system' },
  spec,
});

describe('local PingSource', () => {
  it('sends dev.knative.sources.ping with Knative’s source, content type and data on trigger()', async () => {
    const sink = await startSubscriber();
    const pings = await startPingSources({
      objects: [
        pingSource('sweep', {
          schedule: '*/5 * * * *',
          contentType: 'application/json',
          data: '{"sweep":true}',
          sink: { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'host-lookup' } },
        }),
      ],
      resolveRef: (ref) => {
        expect(ref).toEqual(
          expect.objectContaining({ kind: 'Service', name: 'host-lookup', namespace: 'bpa-system' }),
        );
        return sink.url;
      },
      log: silentLogger,
    });
    try {
      const [emission] = await pings.trigger();
      expect(emission!.result.ok).toBe(true);
      const [received] = await sink.waitForCount(1);
      expect(received!.headers['ce-type']).toBe('dev.knative.sources.ping');
      expect(received!.headers['ce-source']).toBe('/apis/v1/namespaces/bpa-system/pingsources/sweep');
      expect(received!.headers['ce-specversion']).toBe('1.0');
      expect(received!.headers['ce-id']).toBe(emission!.eventId);
      expect(received!.headers['content-type']).toBe('application/json');
      expect(JSON.parse(received!.body.toString())).toEqual({ sweep: true });
    } finally {
      await pings.stop();
      await sink.close();
    }
  });

  it('fires on the intervalMs override', async () => {
    const sink = await startSubscriber();
    const pings = await startPingSources({
      objects: [
        pingSource('fast', {
          schedule: '0 0 1 1 *',
          dataBase64: Buffer.from('hi').toString('base64'),
          sink: { uri: sink.url },
        }),
      ],
      resolveRef: () => '',
      intervalMs: 50,
      log: silentLogger,
    });
    try {
      const received = await sink.waitForCount(2);
      expect(received[0]!.body.toString()).toBe('hi');
      expect(received[0]!.headers['ce-id']).not.toBe(received[1]!.headers['ce-id']);
    } finally {
      await pings.stop();
      await sink.close();
    }
  });

  it('matches cron schedules (steps, ranges, lists, names, time zones)', () => {
    const at = (iso: string) => new Date(iso);
    expect(cronMatches(parseCron('*/15 * * * *'), at('2024-05-06T10:30:00Z'))).toBe(true);
    expect(cronMatches(parseCron('*/15 * * * *'), at('2024-05-06T10:31:00Z'))).toBe(false);
    expect(cronMatches(parseCron('0 9-17/4 * * MON-FRI'), at('2024-05-06T13:00:00Z'))).toBe(true);
    expect(cronMatches(parseCron('0 9-17/4 * * MON-FRI'), at('2024-05-05T13:00:00Z'))).toBe(false);
    expect(cronMatches(parseCron('5,10 0 1 JAN,FEB *'), at('2024-02-01T00:10:00Z'))).toBe(true);
    expect(cronMatches(parseCron('0 0 * * 7'), at('2024-05-05T00:00:00Z'))).toBe(true);
    expect(cronMatches(parseCron('0 9 * * *', 'Europe/Paris'), at('2024-05-06T07:00:00Z'))).toBe(true);
    expect(cronMatches(parseCron('CRON_TZ=America/New_York 0 9 * * *'), at('2024-05-06T13:00:00Z'))).toBe(
      true,
    );
    expect(() => parseCron('* * * *')).toThrow(/5 fields/);
    expect(() => parseCron('61 * * * *')).toThrow(/out of range/);
  });
});
