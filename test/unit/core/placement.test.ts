/**
 * Where the KUD Job runs (contract section 13): KUD_NODE_SELECTOR and KUD_TOLERATIONS as
 * kud-job-launch reads them at start (a bad value is InvalidConfig, naming the variable), the
 * pod specs they give the KUD, cleanup and publisher Jobs, and what status.job says of a pod the
 * scheduler cannot place.
 */
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { kudJobLaunchConfigSchema, placementOf } from '../../../functions/kud-job-launch/config.js';
import { parseEnv } from '../../../shared/config.js';
import { jobProgress } from '../../../shared/core/job-progress.js';
import { buildKudJob } from '../../../shared/core/kud-job.js';
import { launchHash } from '../../../shared/core/launch-hash.js';
import { buildCleanupJob, buildKubeconfigPublisher } from '../../../shared/core/lifecycle-objects.js';
import { BpaError } from '../../../shared/errors.js';

const parse = (env: Record<string, string>) => parseEnv(kudJobLaunchConfigSchema, env, 'kud-job-launch');
const configError = (env: Record<string, string>) => {
  try {
    parse(env);
  } catch (error) {
    expect(error).toBeInstanceOf(BpaError);
    expect((error as BpaError).reason).toBe('InvalidConfig');
    return (error as BpaError).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};
const tainted = [{ key: 'bpa.akraino.org/provisioning', operator: 'Exists', effect: 'NoSchedule' }] as const;

describe('KUD_NODE_SELECTOR', () => {
  it('is empty by default and reads key=value pairs, blanks and spaces dropped', () => {
    expect(parse({}).KUD_NODE_SELECTOR).toEqual({});
    expect(parse({ KUD_NODE_SELECTOR: '' }).KUD_NODE_SELECTOR).toEqual({});
    expect(
      parse({
        KUD_NODE_SELECTOR: ' bpa.akraino.org/provisioning-network = yes ,, kubernetes.io/hostname=edge-1',
      }).KUD_NODE_SELECTOR,
    ).toEqual({ 'bpa.akraino.org/provisioning-network': 'yes', 'kubernetes.io/hostname': 'edge-1' });
    // An empty value is a label value too (`key=` selects nodes labelled key with "").
    expect(parse({ KUD_NODE_SELECTOR: 'role=' }).KUD_NODE_SELECTOR).toEqual({ role: '' });
  });
  it.each([
    ['a part without =', 'provisioning', /KUD_NODE_SELECTOR: "provisioning" is not key=value/],
    ['an empty key', '=yes', /KUD_NODE_SELECTOR: "=yes" is not key=value/],
    ['a key given twice', 'a=1,a=2', /KUD_NODE_SELECTOR: the key "a" is given twice/],
    ['a key with a space', 'my key=1', /KUD_NODE_SELECTOR.*must be a label key/],
    ['a key with an upper-case prefix', 'Example.com/net=1', /must be a label key/],
    ['a name over 63 characters', `${'n'.repeat(64)}=1`, /must be a label key/],
    ['a value with a space', 'net=a b', /KUD_NODE_SELECTOR.*must be a label value/],
    ['a value ending in -', 'net=yes-', /must be a label value/],
  ])('refuses %s at start, naming the variable', (_, value, message) => {
    expect(configError({ KUD_NODE_SELECTOR: value })).toMatch(message);
    expect(configError({ KUD_NODE_SELECTOR: value })).toMatch(/^Invalid configuration for kud-job-launch: /);
  });
});

describe('KUD_TOLERATIONS', () => {
  it('is empty by default and reads a JSON list of tolerations', () => {
    expect(parse({}).KUD_TOLERATIONS).toEqual([]);
    const value = [
      ...tainted,
      {
        key: 'node.kubernetes.io/unreachable',
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 30,
      },
      { key: 'dedicated', operator: 'Equal', value: 'provisioning' },
      { operator: 'Exists' },
    ];
    expect(parse({ KUD_TOLERATIONS: JSON.stringify(value) }).KUD_TOLERATIONS).toEqual(value);
  });
  it.each([
    ['not JSON', '[{key: dedicated}]', /KUD_TOLERATIONS: not JSON/],
    ['not a list', '{"key":"dedicated","operator":"Exists"}', /KUD_TOLERATIONS: .*expected array/],
    ['a misspelt field', '[{"key":"dedicated","operater":"Exists"}]', /KUD_TOLERATIONS\.0: .*operater/],
    ['an unknown operator', '[{"key":"dedicated","operator":"In"}]', /KUD_TOLERATIONS\.0\.operator/],
    ['an unknown effect', '[{"key":"a","operator":"Exists","effect":"NoRun"}]', /KUD_TOLERATIONS\.0\.effect/],
    [
      'no key without Exists',
      '[{"operator":"Equal","value":"x"}]',
      /without a key must have operator Exists/,
    ],
    ['a value with Exists', '[{"key":"a","operator":"Exists","value":"x"}]', /operator Exists has no value/],
    [
      'tolerationSeconds without NoExecute',
      '[{"key":"a","operator":"Exists","tolerationSeconds":5}]',
      /only for effect NoExecute/,
    ],
    ['a bad key', '[{"key":"a b","operator":"Exists"}]', /KUD_TOLERATIONS\.0\.key: must be a label key/],
  ])('refuses %s at start, naming the variable', (_, value, message) => {
    expect(configError({ KUD_TOLERATIONS: value })).toMatch(message);
  });
});

describe('the Jobs’ pod specs', () => {
  const owner = { name: 'edge', namespace: 'tenant', uid: 'uid-1' };
  const placement = placementOf(
    parse({
      KUD_NODE_SELECTOR: 'bpa.akraino.org/provisioning-network=yes',
      KUD_TOLERATIONS: JSON.stringify(tainted),
    }),
  );
  const podOf = (job: V1Job) => job.spec?.template.spec;
  const kudJob = buildKudJob({ owner, cluster: 'edge', inventorySha256: 'a'.repeat(64) }, { placement });

  it('the KUD Job: the selector and the tolerations; none of either when unset', () => {
    expect(podOf(kudJob)?.nodeSelector).toEqual({ 'bpa.akraino.org/provisioning-network': 'yes' });
    expect(podOf(kudJob)?.tolerations).toEqual(tainted);
    const plain = podOf(
      buildKudJob(
        { owner, cluster: 'edge', inventorySha256: 'a'.repeat(64) },
        {
          placement: placementOf(parse({})),
        },
      ),
    );
    expect(plain && 'nodeSelector' in plain).toBe(false);
    expect(plain && 'tolerations' in plain).toBe(false);
  });
  it('the publisher and a cleanup pinned to the KUD node: the tolerations, never the selector', () => {
    const publisher = buildKubeconfigPublisher(owner, 'edge', {
      image: 'p:1',
      nodeName: 'node-7',
      generation: 1,
      functionsNamespace: 'bpa-system',
      placement,
    });
    const cleanup = buildCleanupJob(owner, 'edge', {
      image: 'c:1',
      functionsNamespace: 'bpa-system',
      nodeName: 'node-7',
      placement,
    });
    for (const pod of [podOf(publisher), podOf(cleanup)]) {
      expect(pod?.nodeName).toBe('node-7');
      expect(pod?.tolerations).toEqual(tainted);
      expect(pod?.nodeSelector).toBeUndefined();
    }
  });
  it('a cleanup whose node is unknown: scheduled by the selector, to a node KUD may have run on', () => {
    const cleanup = buildCleanupJob(owner, 'edge', {
      image: 'c:1',
      functionsNamespace: 'bpa-system',
      placement,
    });
    expect(podOf(cleanup)?.nodeName).toBeUndefined();
    expect(podOf(cleanup)?.nodeSelector).toEqual({ 'bpa.akraino.org/provisioning-network': 'yes' });
    expect(podOf(cleanup)?.tolerations).toEqual(tainted);
  });
  it('the builders copy the placement: a Job never shares the config’s objects', () => {
    podOf(kudJob)!.nodeSelector!['x'] = 'y';
    podOf(kudJob)!.tolerations![0]!.key = 'changed';
    expect(placement.nodeSelector).toEqual({ 'bpa.akraino.org/provisioning-network': 'yes' });
    expect(placement.tolerations?.[0]?.key).toBe('bpa.akraino.org/provisioning');
  });
  it('placement is not in the launch hash: it changes where KUD runs, not what it installs', () => {
    // LaunchInputs has no placement field (a changed selector must not reinstall a cluster):
    // the hash of a launch is the same whatever the placement.
    const inputs = {
      inventorySha256: 'a'.repeat(64),
      image: 'kud:1',
      cluster: 'edge',
      sshKeySecret: 's',
      namespace: 'n',
    };
    expect(launchHash({ ...inputs, ...{ placement } } as typeof inputs)).toBe(launchHash(inputs));
  });
});

describe('status.job of a pod no node may run', () => {
  const job: V1Job = { metadata: { name: 'kud-edge' }, spec: { template: {} } };
  const scheduler =
    "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
  const unscheduled: V1Pod = {
    metadata: { name: 'kud-edge-abcde' },
    status: {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: scheduler }],
    },
  };
  it('says Unschedulable with the scheduler’s message', () => {
    expect(jobProgress(job, unscheduled, new Date())).toEqual({
      name: 'kud-edge',
      pod: 'kud-edge-abcde',
      phase: 'Pending',
      waitingReason: 'Unschedulable',
      waitingMessage: scheduler,
    });
  });
  it('a scheduled pod: its container’s reason, not a stale scheduling condition', () => {
    const scheduled: V1Pod = {
      ...unscheduled,
      spec: { nodeName: 'node-1', containers: [] },
      status: {
        ...unscheduled.status,
        containerStatuses: [
          {
            name: 'kud',
            image: 'i',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ContainerCreating' } },
          },
        ],
      },
    };
    expect(jobProgress(job, scheduled, new Date())).toMatchObject({
      nodeName: 'node-1',
      waitingReason: 'ContainerCreating',
    });
    expect(jobProgress(job, scheduled, new Date()).waitingMessage).toBeUndefined();
  });
});
