import { tmpdir } from 'node:os';
import { CloudEvent } from 'cloudevents';
import {
  knativeSourceRetry,
  postEvent,
  postEventWithRetry,
  SinkUnreachableError,
} from '../../../shared/cloudevents/sink-client.js';
import { startRecordingSink, unusedUrl } from './recording-sink.js';

const event = new CloudEvent({
  id: 'sink-1',
  type: 'org.example.test',
  source: '/test',
  subject: 'namespaces/a/things/b',
  datacontenttype: 'application/json',
  data: { hello: 'world' },
  cluster: 'cluster-a',
});

const replyHeaders = {
  'ce-specversion': '1.0',
  'ce-id': 'reply-1',
  'ce-source': '/reply',
  'ce-type': 'org.example.reply',
  'content-type': 'application/json',
};

describe('postEvent', () => {
  it('posts in binary mode by default and reads a reply event', async () => {
    const sink = await startRecordingSink([{ status: 200, headers: replyHeaders, body: '{"ok":true}' }]);
    try {
      const response = await postEvent(sink.url, event, { headers: { traceparent: 'x' } });
      const request = sink.requests[0]!;
      expect(request.method).toBe('POST');
      expect(request.headers['ce-id']).toBe('sink-1');
      expect(request.headers['ce-type']).toBe('org.example.test');
      expect(request.headers['ce-cluster']).toBe('cluster-a');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers.traceparent).toBe('x');
      expect(JSON.parse(request.body.toString())).toEqual({ hello: 'world' });
      expect(response.status).toBe(200);
      expect(response.replyEvent?.type).toBe('org.example.reply');
      expect(response.replyEvent?.data).toEqual({ ok: true });
    } finally {
      await sink.close();
    }
  });

  it('posts in structured mode on request', async () => {
    const sink = await startRecordingSink([{ status: 202 }]);
    try {
      const response = await postEvent(sink.url, event, { structured: true });
      const request = sink.requests[0]!;
      expect(request.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
      expect(request.headers['ce-id']).toBeUndefined();
      expect(JSON.parse(request.body.toString())).toMatchObject({
        id: 'sink-1',
        cluster: 'cluster-a',
        data: { hello: 'world' },
      });
      expect(response.status).toBe(202);
      expect(response.replyEvent).toBeUndefined();
    } finally {
      await sink.close();
    }
  });

  it('resolves for error statuses and reports a broken reply', async () => {
    const sink = await startRecordingSink([
      { status: 200, headers: { ...replyHeaders, 'ce-id': '' }, body: '{}' },
    ]);
    try {
      const response = await postEvent(sink.url, event);
      expect(response.status).toBe(200);
      expect(response.replyEvent).toBeUndefined();
      expect(response.replyError).toMatch(/'id'/);
    } finally {
      await sink.close();
    }
  });

  it('rejects with SinkUnreachableError when nothing listens', async () => {
    const url = await unusedUrl();
    await expect(postEvent(url, event)).rejects.toBeInstanceOf(SinkUnreachableError);
    await expect(postEvent(url, event)).rejects.toMatchObject({
      reason: 'SinkUnreachable',
      kind: 'transient',
    });
  });
  it('refuses to send with a token file it cannot read (SinkTokenUnreadable), sending nothing', async () => {
    const sink = await startRecordingSink([{ status: 202 }]);
    try {
      // A directory where the token file should be: EISDIR, not a missing file.
      await expect(postEvent(sink.url, event, { tokenFile: tmpdir() })).rejects.toMatchObject({
        reason: 'SinkTokenUnreadable',
        message: expect.stringContaining(tmpdir()),
      });
      expect(sink.requests).toHaveLength(0);
    } finally {
      await sink.close();
    }
  });
});

describe('postEventWithRetry (Knative source rules)', () => {
  const noWait = () => {
    const delays: number[] = [];
    return { delays, sleep: async (ms: number) => void delays.push(ms) };
  };

  it.each([404, 413, 425, 429, 502, 503, 504])('retries HTTP %i until it succeeds', async (status) => {
    const sink = await startRecordingSink([{ status }, { status }, { status: 202 }]);
    const { delays, sleep } = noWait();
    try {
      const response = await postEventWithRetry(sink.url, event, { sleep });
      expect(response.status).toBe(202);
      expect(response.attempts).toBe(3);
      expect(sink.requests).toHaveLength(3);
      expect(delays).toEqual([50, 100]);
    } finally {
      await sink.close();
    }
  });

  it.each([500, 400, 401, 409])('does not retry HTTP %i', async (status) => {
    const sink = await startRecordingSink([{ status }, { status: 202 }]);
    const { sleep } = noWait();
    try {
      const response = await postEventWithRetry(sink.url, event, { sleep });
      expect(response.status).toBe(status);
      expect(response.attempts).toBe(1);
      expect(sink.requests).toHaveLength(1);
    } finally {
      await sink.close();
    }
  });

  it('gives up after 5 retries with exponential waits from 50 ms', async () => {
    const sink = await startRecordingSink([{ status: 503 }]);
    const { delays, sleep } = noWait();
    try {
      const response = await postEventWithRetry(sink.url, event, { sleep });
      expect(response.status).toBe(503);
      expect(response.attempts).toBe(1 + knativeSourceRetry.retries);
      expect(sink.requests).toHaveLength(6);
      expect(delays).toEqual([50, 100, 200, 400, 800]);
    } finally {
      await sink.close();
    }
  });

  it('retries connection errors, then rejects', async () => {
    const url = await unusedUrl();
    const { delays, sleep } = noWait();
    await expect(postEventWithRetry(url, event, { sleep })).rejects.toBeInstanceOf(SinkUnreachableError);
    expect(delays).toEqual([50, 100, 200, 400, 800]);
  });
});
