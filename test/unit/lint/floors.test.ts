/**
 * The floors rule (shared <- functions <- local <- cli; functions/<a> never imports
 * functions/<b>; test/ and bench/ import anything) is enforced by eslint.config.js. This runs
 * the project's own ESLint configuration on small sources placed (in memory, never written)
 * under each floor, and checks that a wrong-way import is an error and a permitted one is not.
 */
import { describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const eslint = new ESLint({ cwd: root });

type Form = 'import' | 'import type' | 'export from' | 'import()';

function source(form: Form, specifier: string): string {
  switch (form) {
    case 'import':
      return `import { probe } from '${specifier}';\nexport const used = probe;\n`;
    case 'import type':
      return `import type { Probe } from '${specifier}';\nexport type Used = Probe;\n`;
    case 'export from':
      return `export * from '${specifier}';\n`;
    case 'import()':
      return `export const load = () => import('${specifier}');\n`;
  }
}

/** The floor-rule messages ESLint reports for `specifier` imported from `file`. */
async function floorErrors(file: string, specifier: string, form: Form = 'import'): Promise<string[]> {
  const [result] = await eslint.lintText(source(form, specifier), { filePath: join(root, file) });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax')
    .map((m) => `${m.ruleId}: ${m.message}`);
}

// [importing file (not on disk), import specifier]
const forbidden: [string, string][] = [
  ['shared/errors-probe.ts', '../functions/host-lookup/index.js'],
  ['shared/k8s/probe.ts', '../../functions/host-lookup/index.js'],
  ['shared/k8s/probe.ts', '../../local/stack/index.js'],
  ['shared/k8s/probe.ts', '../../cli/main.js'],
  ['shared/k8s/probe.ts', '../../test/support/cluster.js'],
  ['shared/k8s/probe.ts', '../../../elsewhere/module.js'],
  ['functions/host-lookup/probe.ts', '../software-install/index.js'],
  ['functions/host-lookup/probe.ts', '../../local/stack/index.js'],
  ['functions/host-lookup/probe.ts', '../../cli/main.js'],
  ['functions/host-lookup/probe.ts', '../../bench/run.js'],
  ['functions/software-install/ssh/probe.ts', '../../host-lookup/index.js'],
  ['functions/software-install/ssh/probe.ts', '../../../local/broker/broker.js'],
  ['functions/new-function/deep/er/probe.ts', '../../../kud-job-launch/index.js'],
  ['local/stack-probe.ts', '../cli/main.js'],
  ['local/broker/probe.ts', '../../cli/commands/dev.js'],
  ['local/broker/probe.ts', '../../test/support/sshd.js'],
  ['cli/commands/probe.ts', '../../test/support/cluster.js'],
];

const permitted: [string, string][] = [
  ['shared/k8s/probe.ts', '../errors.js'],
  ['shared/k8s/probe.ts', './conditions.js'],
  ['shared/k8s/probe.ts', '../../shared/log.js'],
  ['shared/k8s/probe.ts', '@kubernetes/client-node'],
  ['functions/host-lookup/probe.ts', './sweep.js'],
  ['functions/host-lookup/probe.ts', '../../shared/errors.js'],
  ['functions/software-install/ssh/probe.ts', '../index.js'],
  ['functions/software-install/ssh/probe.ts', '../../../shared/log.js'],
  ['local/stack-probe.ts', './broker/broker.js'],
  ['local/broker/probe.ts', '../../functions/host-lookup/index.js'],
  ['local/broker/probe.ts', '../../shared/log.js'],
  ['local/broker/probe.ts', '../stack/index.js'],
  ['cli/commands/probe.ts', '../../local/stack/index.js'],
  ['cli/commands/probe.ts', '../main.js'],
  ['test/unit/probe.ts', '../../cli/main.js'],
  ['test/unit/probe.ts', '../../functions/host-lookup/index.js'],
  ['bench/probe.ts', '../local/stack/index.js'],
  ['bench/probe.ts', '../test/support/cluster.js'],
];

describe('eslint.config.js enforces the floors', () => {
  it.each(forbidden)('%s may not import %s', async (file, specifier) => {
    const errors = await floorErrors(file, specifier);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^no-restricted-imports: .* Wrong-way import: .+ \(see CONTRIBUTING\.md, "Floors"\)\.$/,
    );
  });

  it.each(permitted)('%s may import %s', async (file, specifier) => {
    expect(await floorErrors(file, specifier)).toEqual([]);
  });

  it.each(['import type', 'export from', 'import()'] as const)(
    'a wrong-way %s is caught as well',
    async (form) => {
      for (const [file, specifier] of [
        ['shared/core/probe.ts', '../../local/stack/index.js'],
        ['functions/host-lookup/probe.ts', '../kud-job-launch/index.js'],
      ] as const) {
        const errors = await floorErrors(file, specifier, form);
        expect(errors).toHaveLength(1);
        expect(errors[0]).toMatch(/Wrong-way import/);
      }
      expect(await floorErrors('functions/host-lookup/probe.ts', '../../shared/log.js', form)).toEqual([]);
    },
  );
});

describe('an error is described once (describeError)', () => {
  const spelledOut =
    'export const text = (error: unknown) => (error instanceof Error ? error.message : String(error));\n';
  it.each([
    'shared/k8s/probe.ts',
    'functions/host-lookup/probe.ts',
    'local/probe.ts',
    'cli/probe.ts',
    'test/probe.ts',
  ])('spelling it out in %s is an error', async (file) => {
    const [result] = await eslint.lintText(spelledOut, { filePath: join(root, file) });
    expect((result?.messages ?? []).map((m) => m.message)).toContain(
      'Use describeError(error).message from shared/errors.ts instead of spelling it out.',
    );
  });
});
