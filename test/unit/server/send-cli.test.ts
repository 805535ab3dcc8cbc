import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../cli/main.js';
import { startRecordingSink, unusedUrl } from './recording-sink.js';

async function run(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(['send', ...argv], {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
  });
  return { code, stdout, stderr };
}

const replyHeaders = {
  'ce-specversion': '1.0',
  'ce-id': 'reply-7',
  'ce-source': '/bpa-functions/host-lookup',
  'ce-type': 'org.akraino.icn.bpa.hosts.resolved',
  'ce-subject': 'namespaces/lab/provisionings/cluster-a',
  'ce-time': '2026-01-02T03:04:05.000Z',
  'ce-cluster': 'cluster-a',
  'content-type': 'application/json',
};

describe('bpa send', () => {
  it('posts a binary-mode event and prints the reply event', async () => {
    const sink = await startRecordingSink([
      { status: 200, headers: replyHeaders, body: JSON.stringify({ nodes: [{ label: 'm1' }] }) },
    ]);
    try {
      const result = await run([
        '--to',
        sink.url,
        '--type',
        'dev.knative.apiserver.resource.add',
        '--subject',
        '/apis/bpa.akraino.org/v1alpha1/namespaces/lab/provisionings/cluster-a',
        '--data',
        '{"kind":"Provisioning"}',
        '--extension',
        'kind=Provisioning',
        '--extension',
        'namespace=lab',
        '--id',
        'manual-1',
      ]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(
        [
          'HTTP 200 OK',
          'Context Attributes,',
          '  cluster: cluster-a',
          '  datacontenttype: application/json',
          '  id: reply-7',
          '  source: /bpa-functions/host-lookup',
          '  specversion: 1.0',
          '  subject: namespaces/lab/provisionings/cluster-a',
          '  time: 2026-01-02T03:04:05.000Z',
          '  type: org.akraino.icn.bpa.hosts.resolved',
          'Data,',
          '  {',
          '    "nodes": [',
          '      {',
          '        "label": "m1"',
          '      }',
          '    ]',
          '  }',
          '',
        ].join('\n'),
      );
      const request = sink.requests[0]!;
      expect(request.headers['ce-id']).toBe('manual-1');
      expect(request.headers['ce-source']).toBe('bpa-cli');
      expect(request.headers['ce-type']).toBe('dev.knative.apiserver.resource.add');
      expect(request.headers['ce-subject']).toBe(
        '/apis/bpa.akraino.org/v1alpha1/namespaces/lab/provisionings/cluster-a',
      );
      expect(request.headers['ce-kind']).toBe('Provisioning');
      expect(request.headers['ce-namespace']).toBe('lab');
      expect(request.headers['content-type']).toBe('application/json');
      expect(JSON.parse(request.body.toString())).toEqual({ kind: 'Provisioning' });
    } finally {
      await sink.close();
    }
  });

  it('sends structured mode, data from a file, and prints a plain body', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpa-send-'));
    const file = join(dir, 'data.json');
    writeFileSync(file, '{"cluster": "cluster-b"}\n');
    const sink = await startRecordingSink([
      { status: 202, headers: { 'content-type': 'text/plain' }, body: 'accepted\n' },
    ]);
    try {
      const result = await run([
        '--to',
        sink.url,
        '--type',
        'org.akraino.icn.bpa.cluster.ready',
        '--source',
        '/manual',
        '--data',
        `@${file}`,
        '--structured',
      ]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe('HTTP 202 Accepted\naccepted\n');
      const request = sink.requests[0]!;
      expect(request.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
      expect(JSON.parse(request.body.toString())).toMatchObject({
        type: 'org.akraino.icn.bpa.cluster.ready',
        source: '/manual',
        datacontenttype: 'application/json',
        data: { cluster: 'cluster-b' },
      });
    } finally {
      await sink.close();
    }
  });

  it('sends non-JSON data as is with --content-type', async () => {
    const sink = await startRecordingSink([{ status: 204 }]);
    try {
      const result = await run([
        '--to',
        sink.url,
        '--type',
        't.x',
        '--data',
        'not json',
        '--content-type',
        'text/plain',
      ]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe('HTTP 204 No Content\n');
      expect(sink.requests[0]!.headers['content-type']).toBe('text/plain');
      expect(sink.requests[0]!.body.toString()).toBe('not json');
    } finally {
      await sink.close();
    }
  });

  it('exits 1 on a non-2xx answer and prints the JSON error', async () => {
    const sink = await startRecordingSink([
      {
        status: 400,
        headers: { 'content-type': 'application/json' },
        body: '{"error":{"reason":"InvalidEventData","message":"name: required"}}',
      },
    ]);
    try {
      const result = await run(['--to', sink.url, '--type', 't.x', '--data', '{}']);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe(
        [
          'HTTP 400 Bad Request',
          '{',
          '  "error": {',
          '    "reason": "InvalidEventData",',
          '    "message": "name: required"',
          '  }',
          '}',
          '',
        ].join('\n'),
      );
      expect(result.stderr).toBe(
        `bpa send: ${sink.url} answered HTTP 400 Bad Request (the request was refused): InvalidEventData: name: required\n`,
      );
    } finally {
      await sink.close();
    }
  });

  it('exits 1 with one line on stderr naming a 5xx and the first line of a body that is not JSON', async () => {
    const sink = await startRecordingSink([
      { status: 503, headers: { 'content-type': 'text/plain' }, body: '\nupstream down\nmore detail\n' },
    ]);
    try {
      const result = await run(['--to', sink.url, '--type', 't.x']);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `bpa send: ${sink.url} answered HTTP 503 Service Unavailable (the server failed): upstream down\n`,
      );
    } finally {
      await sink.close();
    }
  });

  it('exits 1 with a message on stderr when the URL cannot be reached', async () => {
    const url = await unusedUrl();
    const result = await run(['--to', url, '--type', 't.x']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      new RegExp(`^bpa send: Cannot reach ${url.replace(/[./]/g, '\\$&')}: ECONNREFUSED`),
    );
  });

  it.each([
    [['--type', 't.x'], /--to URL is required/],
    [['--to', 'http://127.0.0.1:1/'], /--type TYPE is required/],
    [['--to', 'not a url', '--type', 't.x'], /is not a URL/],
    [['--to', 'ftp://host/', '--type', 't.x'], /not an http\(s\) URL/],
    [['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--data', '{bad'], /--data is not valid JSON/],
    [
      ['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--data', '@/nonexistent/file.json'],
      /cannot read --data file/,
    ],
    [
      ['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--extension', 'Bad_Name=x'],
      /lower-case letters and digits/,
    ],
    [['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--extension', 'novalue'], /expected NAME=VALUE/],
    [['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--source', 'not a uri'], /not a valid CloudEvent/],
    [['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--timeout', '-1'], /--timeout/],
    [['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--bogus'], /bogus/],
    [
      ['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--token-file', '/nonexistent/token'],
      /cannot read --token-file/,
    ],
    [
      ['--to', 'http://127.0.0.1:1/', '--type', 't.x', '--token-file', '/dev/null'],
      /--token-file \/dev\/null is empty/,
    ],
  ])('usage error %j exits 2', async (argv, message) => {
    const result = await run(argv);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^bpa send: /);
    expect(result.stderr).toMatch(message);
  });

  it('sends --token-file as a bearer token (a Broker with OIDC on wants one)', async () => {
    const sink = await startRecordingSink([{ status: 202 }]);
    const file = join(mkdtempSync(join(tmpdir(), 'send-token-')), 'token');
    writeFileSync(file, 'eyJ.token.sig\n');
    try {
      const result = await run(['--to', sink.url, '--type', 't.x', '--token-file', file]);
      expect(result.code).toBe(0);
      expect(sink.requests[0]!.headers.authorization).toBe('Bearer eyJ.token.sig');
    } finally {
      await sink.close();
    }
  });

  it('prints its usage with --help', async () => {
    const result = await run(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: bpa send --to URL --type TYPE \[options\]/);
    for (const option of [
      '--to',
      '--type',
      '--source',
      '--subject',
      '--data',
      '--structured',
      '--extension',
      '--id',
      '--token-file',
    ]) {
      expect(result.stdout).toContain(option);
    }
  });
});
