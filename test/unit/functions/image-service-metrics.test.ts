import { describe, expect, it } from '@jest/globals';
import { imageServiceMetrics, routeOf } from '../../../functions/image-upload/metrics.js';

describe('image service metrics', () => {
  it('labels a request by the part of the service it is for, never by its path', () => {
    expect(routeOf('/files')).toBe('tus');
    expect(routeOf('/files/abc?x=1')).toBe('tus');
    expect(routeOf('/v1/baremetalcluster/ns/c/os_images')).toBe('legacy');
    expect(routeOf('/images/ns/name')).toBe('download');
    expect(routeOf('/health/readiness')).toBe('health');
    expect(routeOf('/metrics')).toBe('metrics');
    expect(routeOf('/filesystem')).toBe('other');
    expect(routeOf(undefined)).toBe('other');
  });

  it('counts answers by route, method and code; an unknown method is one label value', async () => {
    const metrics = imageServiceMetrics();
    const started = process.hrtime.bigint();
    metrics.record('tus', 'PATCH', 204, started);
    metrics.record('tus', 'PATCH', 204, started);
    metrics.record('other', 'BREW', 404, started);
    metrics.record('other', 'PROPFIND', 404, started);
    const { body } = await metrics.exposition();
    expect(body).toContain('bpa_image_http_requests_total{route="tus",method="PATCH",code="204"} 2');
    expect(body).toContain('bpa_image_http_requests_total{route="other",method="other",code="404"} 2');
    expect(body).toContain(
      'bpa_image_http_request_duration_seconds_count{route="tus",method="PATCH",code="204"} 2',
    );
    expect(body).toContain('process_cpu_seconds_total');
  });
});
