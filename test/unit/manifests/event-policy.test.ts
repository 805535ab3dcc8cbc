/**
 * components/event-authorization(-image-service): the EventPolicies that close the Broker to all
 * but the manifests' own senders once Eventing's authentication-oidc is on (issue 23 item 6).
 * A sender the policies miss would have its events refused with 403, so these check that every
 * sender of the rendered manifests is named, and nothing that is not there: an unresolvable
 * reference leaves the EventPolicy, and with it the Broker, not Ready. The real engine's answers
 * are tested by test/integration/chain/event-authorization.test.ts.
 */
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { triggerOidcServiceAccount } from '../../support/knative-oidc.js';
import { kubeObjectSchema, kustomizeWithComponents, type KubeObject } from './kustomize.js';

const refSchema = z.object({ apiVersion: z.string(), kind: z.string(), name: z.string() });
const eventPolicySchema = z.looseObject({
  kind: z.literal('EventPolicy'),
  metadata: z.looseObject({ name: z.string(), namespace: z.string() }),
  spec: z.object({
    to: z.array(z.object({ ref: refSchema })),
    from: z.array(z.union([z.object({ ref: refSchema }), z.object({ sub: z.string() })])),
  }),
});

const render = (components: string[]) =>
  parseAllDocuments(kustomizeWithComponents(components)).map((d) => kubeObjectSchema.parse(d.toJS()));

const key = (o: { kind: string; name: string }) => `${o.kind}/${o.name}`;


/** Every object that sends to the manifests' Broker: sources and SinkBindings whose sink it is, Triggers on it. */
function sendersOf(objects: KubeObject[]): string[] {
  const spec = (o: KubeObject) => (o as { spec?: Record<string, unknown> }).spec ?? {};
  const sinksToBroker = (o: KubeObject) => {
    const sink = spec(o)['sink'] as { ref?: { kind?: string; name?: string } } | undefined;
    return sink?.ref?.kind === 'Broker' && sink.ref.name === 'default';
  };
  return objects
    .filter((o) =>
      o.kind === 'Trigger'
        ? spec(o)['broker'] === 'default'
        : ['ApiServerSource', 'PingSource', 'SinkBinding'].includes(o.kind) && sinksToBroker(o),
    )
    .map((o) => key({ kind: o.kind, name: o.metadata.name }))
    .sort();
}

function policyRefs(objects: KubeObject[]) {
  const policies = objects.filter((o) => o.kind === 'EventPolicy').map((o) => eventPolicySchema.parse(o));
  return {
    policies,
    refs: policies
      .flatMap((p) => p.spec.from.flatMap((f) => ('ref' in f ? [key(f.ref)] : [])))
      .sort(),
    subs: policies.flatMap((p) => p.spec.from.flatMap((f) => ('sub' in f ? [f.sub] : []))),
  };
}

describe('components/event-authorization', () => {
  const objects = render(['event-authorization']);
  const { policies, refs, subs } = policyRefs(objects);

  it('names every sender of the manifests, and only those, on the Broker default in bpa-system', () => {
    expect(policies).toHaveLength(1);
    expect(policies[0]!.metadata.namespace).toBe('bpa-system');
    expect(policies[0]!.spec.to).toEqual([
      { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } },
    ]);
    const senders = sendersOf(objects);
    // The three sources and three SinkBindings by reference; the eleven Triggers by subject.
    expect(senders).toHaveLength(17);
    expect(refs).toEqual(senders.filter((s) => !s.startsWith('Trigger/')));
    expect(subs.filter((s) => !s.endsWith(':bpa-sender')).sort()).toEqual(
      senders
        .filter((s) => s.startsWith('Trigger/'))
        .map((s) => `system:serviceaccount:bpa-system:${triggerOidcServiceAccount(s.slice('Trigger/'.length))}`)
        .sort(),
    );
  });

  it("computes a Trigger's OIDC ServiceAccount as Knative does, hashed past 63 characters", () => {
    // Names seen on the real engine (kubectl get serviceaccounts -n bpa-system).
    expect(triggerOidcServiceAccount('host-lookup-sweep')).toBe('host-lookup-sweep-oidc-eventing.knative.dev-trigger');
    expect(triggerOidcServiceAccount('host-lookup-provisioning-update')).toBe(
      'host-lookup-provisioning-updatee9d38d58409807c25f0a0f6947bacbe1',
    );
  });

  it('admits people sending by hand only as bpa-sender, a ServiceAccount it ships without a mounted token', () => {
    expect(subs.filter((s) => !s.includes('-oidc-') && !/[0-9a-f]{32}$/.test(s))).toEqual([
      'system:serviceaccount:bpa-system:bpa-sender',
    ]);
    const sender = objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === 'bpa-sender');
    expect(sender).toMatchObject({ metadata: { namespace: 'bpa-system' }, automountServiceAccountToken: false });
  });

  it('is not in the base: with OIDC off an EventPolicy is never Ready, nor is its Broker', () => {
    expect(render([]).filter((o) => o.kind === 'EventPolicy')).toEqual([]);
  });
});

describe('components/event-authorization-image-service', () => {
  it("with the image service, the two policies together name every sender, the image service's too", () => {
    const objects = render(['image-service', 'event-authorization', 'event-authorization-image-service']);
    const { policies, refs, subs } = policyRefs(objects);
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(['bpa-functions', 'bpa-image-service']);
    const senders = sendersOf(objects);
    expect(senders).toEqual(
      expect.arrayContaining(['SinkBinding/image-upload-sink', 'Trigger/image-verify-image-uploaded']),
    );
    expect(refs).toEqual(senders.filter((s) => !s.startsWith('Trigger/')));
    for (const trigger of senders.filter((s) => s.startsWith('Trigger/')))
      expect(subs).toContain(
        `system:serviceaccount:bpa-system:${triggerOidcServiceAccount(trigger.slice('Trigger/'.length))}`,
      );
  });
});
