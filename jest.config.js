// Two projects: `unit` (pure, no processes) and `integration` (real kube-apiserver + etcd,
// real sshd, the embedded stack). The integration project starts one control plane per
// test run in its global setup and shares it with every test file through environment
// variables; each test file makes its own namespace.
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
  ],
};
const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform,
};

/** @type {import('jest').Config} */
export default {
  testTimeout: 60000,
  maxWorkers: 2,
  projects: [
    { ...common, displayName: 'unit', roots: ['<rootDir>/test/unit'], testMatch: ['**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      roots: ['<rootDir>/test/integration', '<rootDir>/test/e2e'],
      testMatch: ['**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
