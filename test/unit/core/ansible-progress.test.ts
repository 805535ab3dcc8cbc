/**
 * The parser of the installer's Ansible output (contract section 14), read on real
 * ansible-playbook output captured from the KUD installer stand-in (test/fixtures/ansible/README.md).
 */
import { readFileSync } from 'node:fs';
import {
  describeFailure,
  failedNodesSummary,
  nodesWithProgress,
  mergeNodeProgress,
  messageMaxChars,
  parseAnsibleOutput,
  type NodeProgress,
} from '../../../shared/core/ansible-progress.js';

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/ansible/${name}`, import.meta.url), 'utf8');
const hostsOf = (text: string) => Object.fromEntries(parseAnsibleOutput(text).hosts);

describe('parseAnsibleOutput on real stand-in output', () => {
  it('a run where every host answers: each host Succeeded, at its last play and task', () => {
    const parsed = parseAnsibleOutput(fixture('stand-in-succeeds.log'));
    expect(parsed.finished).toBe(true);
    expect(Object.fromEntries(parsed.hosts)).toEqual({
      'master-1': {
        phase: 'Succeeded',
        play: 'Control plane (stand-in, installs nothing)',
        task: 'Run true on the master',
      },
      'master-2': {
        phase: 'Succeeded',
        play: 'Control plane (stand-in, installs nothing)',
        task: 'Run true on the master',
      },
      'worker-1': {
        phase: 'Succeeded',
        play: 'Nodes (stand-in, installs nothing)',
        task: 'Run true on the node',
      },
    });
  });

  it('an unreachable host: Failed, HostUnreachable, at the task it failed, with ssh’s words', () => {
    const hosts = hostsOf(fixture('stand-in-unreachable.log'));
    expect(hosts['master-2']).toEqual({
      phase: 'Failed',
      play: 'Reach every host (kubespray bootstrap-os)',
      task: 'Ping the host over SSH',
      failure: 'HostUnreachable',
      message: expect.stringContaining('ssh: connect to host 127.0.0.42 port 22: Connection refused'),
    });
    expect(hosts['master-1']?.phase).toBe('Succeeded');
    expect(hosts['worker-1']?.phase).toBe('Succeeded');
  });

  it('a failed task, its result spread over lines: Failed, TaskFailed, the task and Ansible’s msg', () => {
    const hosts = hostsOf(fixture('stand-in-task-failed.log'));
    expect(hosts['worker-1']).toEqual({
      phase: 'Failed',
      play: "Check the hosts as kubespray's preinstall does (kubernetes/preinstall)",
      task: 'Stop if memory is too small for nodes',
      failure: 'TaskFailed',
      message: expect.stringMatching(/^\d+ MiB of memory; a node needs 1099511627776$/),
    });
    expect(hosts['master-1']).toMatchObject({ phase: 'Succeeded', task: 'Run true on the master' });
    expect(describeFailure('worker-1', hosts['worker-1']!)).toMatch(
      /^host worker-1 failed at task \[Stop if memory is too small for nodes\]: \d+ MiB of memory/,
    );
  });

  it('while the run goes on (no recap yet): hosts Running at the play and task they reached', () => {
    const text = fixture('stand-in-unreachable.log');
    const parsed = parseAnsibleOutput(text.slice(0, text.indexOf('PLAY [Control plane')));
    expect(parsed.finished).toBe(false);
    expect(Object.fromEntries(parsed.hosts)).toMatchObject({
      'master-1': { phase: 'Running', task: 'Stop if memory is too small for nodes' },
      'worker-1': { phase: 'Running', task: 'Stop if memory is too small for nodes' },
      'master-2': { phase: 'Failed', failure: 'HostUnreachable', task: 'Ping the host over SSH' },
    });
  });

  it('every host unreachable: each Failed at the first task', () => {
    const hosts = hostsOf(fixture('stand-in-all-unreachable.log'));
    for (const label of ['master-1', 'master-2', 'worker-1'])
      expect(hosts[label]).toMatchObject({
        phase: 'Failed',
        failure: 'HostUnreachable',
        task: 'Ping the host over SSH',
        message: expect.stringContaining('Permission denied (publickey)'),
      });
  });

  it('no Ansible output at all (the stand-in stopped before): no host', () => {
    expect(parseAnsibleOutput('[kud-installer stand-in] FAILED: no inventory at /x\n').hosts.size).toBe(0);
  });
});

describe('parseAnsibleOutput on other shapes of the default output', () => {
  it('a failure ignored (ignore_errors) or rescued goes back to Running, then the recap decides', () => {
    const text = [
      'TASK [may fail] ***',
      'fatal: [a]: FAILED! => {"changed": false, "msg": "nope"}',
      '...ignoring',
      'fatal: [b]: FAILED! => {"changed": false, "msg": "nope"}',
      '',
      'TASK [rescue] ***',
      'ok: [b]',
    ].join('\n');
    expect(hostsOf(text)).toEqual({
      a: { phase: 'Running', task: 'may fail' },
      b: { phase: 'Running', task: 'rescue' },
    });
  });

  it('loops, delegation and changed results name the host; a long message is bounded', () => {
    const long = 'x'.repeat(5000);
    const text = [
      'PLAY [p] ***',
      'TASK [t] ***',
      'changed: [a -> localhost] => (item=1)',
      `fatal: [b]: FAILED! => {"msg": "${long}"}`,
    ].join('\n');
    const hosts = hostsOf(text);
    expect(hosts.a).toEqual({ phase: 'Running', play: 'p', task: 't' });
    expect(hosts.b?.message?.length).toBe(messageMaxChars);
  });

  it('a result cut off by the end of the window still gives its msg', () => {
    const hosts = hostsOf('TASK [t] ***\nfatal: [a]: FAILED! => {\n    "msg": "disk full",\n    "rc": 1');
    expect(hosts.a).toMatchObject({ phase: 'Failed', message: 'disk full' });
  });
});

describe('mergeNodeProgress', () => {
  const failed: NodeProgress = {
    phase: 'Failed',
    play: 'p',
    task: 'Ping the host over SSH',
    failure: 'HostUnreachable',
    message: 'refused',
  };

  it('a node the output has not named is Pending, or keeps what was recorded', () => {
    expect(mergeNodeProgress(undefined, undefined)).toEqual({ phase: 'Pending' });
    expect(mergeNodeProgress(failed, undefined)).toBe(failed);
  });

  it('a recap whose fatal line left the window keeps the recorded task and message', () => {
    const recap = parseAnsibleOutput('PLAY RECAP ***\na : ok=0 changed=0 unreachable=1 failed=0 skipped=0\n');
    expect(mergeNodeProgress(failed, recap.hosts.get('a'))).toEqual(failed);
  });

  it('a new window wins where it says something', () => {
    const next = parseAnsibleOutput('ok: [a]\n').hosts.get('a');
    expect(mergeNodeProgress({ phase: 'Running', play: 'p', task: 't' }, next)).toEqual({
      phase: 'Running',
      play: 'p',
      task: 't',
    });
    expect(mergeNodeProgress(failed, next)).toEqual({
      phase: 'Running',
      play: 'p',
      task: 'Ping the host over SSH',
    });
  });
});

describe('nodesWithProgress and failedNodesSummary', () => {
  const node = (label: string, ip: string) => ({
    label,
    roles: ['master' as const],
    mac: '52:54:00:00:00:01',
    ip,
    source: 'dhcp-leases' as const,
  });
  const nodes = [
    node('master-1', '127.0.0.41'),
    node('master-2', '127.0.0.42'),
    node('worker-1', '127.0.0.43'),
  ];

  it('each node gets its progress by label; a node the output does not name is Pending', () => {
    const text = fixture('stand-in-unreachable.log');
    const windowed = nodesWithProgress([...nodes, node('other', '127.0.0.44')], text);
    expect(windowed!.map((n) => [n.label, n.phase, n.ip])).toEqual([
      ['master-1', 'Succeeded', '127.0.0.41'],
      ['master-2', 'Failed', '127.0.0.42'],
      ['worker-1', 'Succeeded', '127.0.0.43'],
      ['other', 'Pending', '127.0.0.44'],
    ]);
    expect(failedNodesSummary(windowed!)).toMatch(
      /^host master-2 was unreachable at task \[Ping the host over SSH\]: Data could not be sent/,
    );
    expect(failedNodesSummary(nodesWithProgress(nodes, fixture('stand-in-succeeds.log'))!)).toBeUndefined();
  });

  it('a later window keeps what an earlier one recorded; an earlier Job’s progress is dropped', () => {
    const text = fixture('stand-in-task-failed.log');
    const cut = text.indexOf('PLAY [Control plane');
    const first = nodesWithProgress(nodes, text.slice(0, cut));
    expect(first!.find((n) => n.label === 'worker-1')).toMatchObject({
      phase: 'Failed',
      failure: 'TaskFailed',
    });
    const second = nodesWithProgress(first!, text.slice(cut))!;
    expect(second.find((n) => n.label === 'worker-1')).toMatchObject({
      phase: 'Failed',
      task: 'Stop if memory is too small for nodes',
      message: expect.stringContaining('a node needs 1099511627776'),
    });
    expect(nodesWithProgress(first!, text.slice(0, text.indexOf('PLAY [Gather')), false)).toEqual([
      expect.objectContaining({ label: 'master-1', phase: 'Running', task: 'Ping the host over SSH' }),
      expect.objectContaining({ label: 'master-2', phase: 'Running' }),
      expect.objectContaining({ label: 'worker-1', phase: 'Running', task: 'Ping the host over SSH' }),
    ]);
    // An installer that prints no Ansible output: status.nodes is left as it is.
    expect(nodesWithProgress(nodes, 'installing...\n')).toBeUndefined();
    expect(nodesWithProgress(first!, 'installing...\n', false)).toBeUndefined();
    // Idempotent: the same window again changes nothing (no status write).
    expect(nodesWithProgress(second, text.slice(cut))).toEqual(second);
  });
});
