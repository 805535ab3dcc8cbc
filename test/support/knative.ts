/**
 * The suites on real Knative Eventing (test/integration/knative/): the global setup installs it
 * on the run's node (engines/build.sh knative, its own config/ YAML; local/knative/install.ts).
 * describeOnKnative skips, saying why, when it is not there (no root, BPA_TEST_KNATIVE=0).
 * A subscriber is the event recorder pod (test/fixtures/node/event-recorder.mjs), reached from
 * the tests by its pod IP: the test process shares the node's bridge.
 */
import { describe } from '@jest/globals';
import { testEnv } from './control-plane-env.js';
import { noNodeReason } from './node.js';

/** Why the run has no Knative Eventing, or undefined when it has. */
export function noKnativeReason(): string | undefined {
  const noNode = noNodeReason();
  if (noNode) return `no node: ${noNode}`;
  if (process.env[testEnv.knative]) return undefined;
  return (
    process.env[testEnv.noKnative] ??
    `${testEnv.knative} is not set (the global setup did not install Knative)`
  );
}

/** describe() when the run has real Knative Eventing; otherwise describe.skip(), saying why. */
export function describeOnKnative(name: string, body: () => void): void {
  const reason = noKnativeReason();
  if (!reason) {
    describe(name, body);
    return;
  }
  process.stderr.write(
    `[knative] skipping "${name}": it needs Knative Eventing on the run's node, and ${reason}\n`,
  );
  describe.skip(`${name} (skipped: needs Knative Eventing; ${reason})`, body);
}

export * from './knative-objects.js';
