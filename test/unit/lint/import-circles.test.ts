/**
 * No import circles in shared/, functions/, local/, cli/ or bench/ (issue 26 item 5 broke the
 * last two: bench/run.ts with its modules, shared/k8s/custom-objects.ts with status-writer.ts).
 * A circle makes module start-up order matter (a binding read before its module ran is
 * undefined) and usually means two files are one concern. Every relative import counts, type-only
 * ones too, as TypeScript's own pre-processor reads them (static, `export from`, `import()`).
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const folders = ['shared', 'functions', 'local', 'cli', 'bench'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The repository file a relative specifier names (`./x.js` is `./x.ts`), if it is one. */
function target(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((path) => path.endsWith('.ts') && existsSync(path));
}

/** Each file and the repository files it imports. */
function importGraph(): Map<string, string[]> {
  const files = folders.flatMap((folder) => sourceFiles(join(root, folder)));
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      const targets = importedFiles.map((ref) => target(file, ref.fileName));
      return [relative(root, file), targets.flatMap((t) => (t ? [relative(root, t)] : []))];
    }),
  );
}

/** The circles of a graph: its strongly connected components of more than one file, or a file importing itself. */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = stack.splice(stack.indexOf(node));
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('import circles', () => {
  it('finds a circle, a longer one and a self-import, and nothing in a tree', () => {
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['a.ts', 'c.ts']],
          ['c.ts', []],
          ['d.ts', ['e.ts']],
          ['e.ts', ['f.ts']],
          ['f.ts', ['d.ts']],
          ['g.ts', ['g.ts']],
        ]),
      ),
    ).toEqual(expect.arrayContaining([['a.ts', 'b.ts'], ['d.ts', 'e.ts', 'f.ts'], ['g.ts']]));
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts', 'c.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('reads the real tree: bench/run.ts imports its modules', () => {
    const graph = importGraph();
    expect(graph.get('bench/run.ts')?.length).toBeGreaterThan(3);
    expect(graph.get('shared/k8s/status-apply.ts')).toContain('shared/k8s/custom-objects.ts');
  });

  it('has none in shared/, functions/, local/, cli/ or bench/', () => {
    expect(circles(importGraph())).toEqual([]);
  });
});
