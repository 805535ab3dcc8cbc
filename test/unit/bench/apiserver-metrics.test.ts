import {
  describeRequests,
  parseRequestCounts,
  requestDelta,
  totalRequests,
} from '../../../bench/fleet/apiserver-metrics.js';

// Lines as kube-apiserver 1.36 writes them on /metrics (labels in its order, a HELP and TYPE
// header, and another family whose name starts alike).
const scrape = (puts: number) => `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="bpa.akraino.org",resource="provisionings",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} ${puts}
apiserver_request_total{code="409",component="apiserver",dry_run="",group="bpa.akraino.org",resource="provisionings",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/healthz",verb="GET",version=""} 7
apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 99
`;

describe('the API server request counts of the benches', () => {
  it('sums every code of a verb and resource, subresources apart, other families ignored', () => {
    const counts = parseRequestCounts(scrape(100));
    expect(counts.get('PUT provisionings/status')).toBe(103);
    expect(counts.get('POST configmaps')).toBe(40);
    expect(counts.get('GET /healthz')).toBe(7);
    expect(totalRequests(counts)).toBe(150);
  });

  it('keeps only what moved between two scrapes, and describes it per object', () => {
    const delta = requestDelta(parseRequestCounts(scrape(100)), parseRequestCounts(scrape(160)));
    expect([...delta]).toEqual([['PUT provisionings/status', 60]]);
    expect(describeRequests(delta, 20)).toBe('PUT provisionings/status 3.0');
  });
});
