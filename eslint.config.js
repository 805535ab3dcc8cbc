import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/**
 * The floors (shared/spec/layout.md, CONTRIBUTING.md): shared <- functions <- local <- cli, each
 * importing only from the floors below it; functions/<a> never imports functions/<b>; test/ and
 * bench/ may import anything, and nothing imports them.
 *
 * An import path is relative, so whether it leaves a floor depends on how deep the importing file
 * sits: from a file `depth` folders below the repository root, exactly `depth` times `../` reaches
 * the root. One block per floor and depth names the folders allowed right after that, and
 * (for functions/) forbids stopping one level short, in the functions/ folder itself.
 */
const floors = [
  { folder: 'shared', allowed: ['shared'], why: 'shared/ is the bottom floor: it imports only shared/' },
  {
    folder: 'functions',
    allowed: ['shared'],
    why: 'a function imports only its own folder and shared/ (never local/, cli/ or another function)',
  },
  {
    folder: 'local',
    allowed: ['shared', 'functions', 'local'],
    why: 'local/ imports only shared/ and functions/',
  },
  {
    folder: 'cli',
    allowed: ['shared', 'functions', 'local', 'cli'],
    why: 'cli/ imports shared/, functions/ and local/',
  },
];
const deepestFile = 12;
const sourceFiles = '*.{ts,mts,cts,js,mjs,cjs}';

/** `../` repeated: as a regex source for no-restricted-imports, and with `\x2F` for esquery (no `/` allowed there). */
const ups = (n, slash = '/') => `(\\.\\.${slash}){${n}}`;

function restrictions(floor, depth, slash) {
  const allowedAtRoot = floor.allowed.map((f) => `${f}${slash}`).join('|');
  const leavesFloor = [`^${ups(depth, slash)}(?!${allowedAtRoot})`];
  // From functions/<a>/..., stopping at functions/ means naming a function folder: never one's own way in.
  if (floor.folder === 'functions' && depth >= 2)
    leavesFloor.push(`^${ups(depth - 1, slash)}(?!\\.\\.${slash})`);
  return leavesFloor;
}

/** An error's text is describeError(error).message (shared/errors.ts), never spelled out again. */
const spelledOutErrorText = {
  selector:
    "ConditionalExpression[test.operator='instanceof'][test.right.name='Error'][consequent.property.name='message']",
  message: 'Use describeError(error).message from shared/errors.ts instead of spelling it out.',
};

const floorBlocks = floors.flatMap((floor) =>
  Array.from({ length: deepestFile }, (_, i) => i + 1)
    .filter((depth) => floor.folder !== 'functions' || depth >= 2)
    .map((depth) => ({
      files: [`${floor.folder}/${'*/'.repeat(depth - 1)}${sourceFiles}`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: restrictions(floor, depth, '/').map((regex) => ({
              regex,
              message: `Wrong-way import: ${floor.why} (see CONTRIBUTING.md, "Floors").`,
            })),
          },
        ],
        'no-restricted-syntax': [
          'error',
          spelledOutErrorText,
          ...restrictions(floor, depth, '\\x2F').map((regex) => ({
            selector: `ImportExpression > Literal.source[value=/${regex}/]`,
            message: `Wrong-way import(): ${floor.why} (see CONTRIBUTING.md, "Floors").`,
          })),
        ],
      },
    })),
);

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'functions/*/dist/**',
      'node_modules/**',
      'coverage/**',
      'test/artifacts/**',
      'engines/**/*.go',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        Buffer: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // The floor blocks below repeat this (a rule's options are replaced, not merged, per file).
      'no-restricted-syntax': ['error', spelledOutErrorText],
    },
  },
  ...floorBlocks,
);
