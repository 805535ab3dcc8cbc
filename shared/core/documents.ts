import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import { invalid } from '../errors.js';
import { bareMetalHostSchema } from '../schemas/bare-metal-host.js';
import { describeIssues } from '../schemas/issues.js';
import { fastBareMetalHost } from './bare-metal-host-fast.js';

/** Aliases beyond this many per document are refused (billion-laughs style inputs). */
const maxAliasCount = 100;

/**
 * Kubernetes objects from a text: YAML (one or many `---` documents) or JSON, where a
 * document may also be a JSON/YAML array or a `List`/`<Kind>List` with `items`. Empty
 * documents are skipped. Throws BpaError `InvalidDocument` with a one-line message.
 */
export function parseObjects(text: string): unknown[] {
  return parseDocuments(text).flatMap(flattenList);
}

function parseDocuments(text: string): unknown[] {
  const trimmed = text.trimStart();
  // JSON is the common machine-made case and much faster to read than YAML.
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return [JSON.parse(trimmed)];
    } catch {
      // Not strict JSON: YAML flow style is still possible.
    }
  }
  const documents = parseAllDocuments(text, { uniqueKeys: true });
  if (!Array.isArray(documents)) return [];
  return documents.map((document, index) => {
    const [error] = document.errors;
    const where = documents.length > 1 ? ` in document ${index + 1}` : '';
    if (error) throw invalid('InvalidDocument', `not valid YAML${where}: ${firstLine(error.message)}`);
    try {
      return document.toJS({ maxAliasCount });
    } catch (cause) {
      const message = cause instanceof Error ? firstLine(cause.message) : String(cause);
      throw invalid('InvalidDocument', `not valid YAML${where}: ${message}`);
    }
  });
}

function flattenList(document: unknown): unknown[] {
  if (document === null || document === undefined) return [];
  if (Array.isArray(document)) return document.flatMap(flattenList);
  if (typeof document === 'object') {
    const { kind, items } = document as { kind?: unknown; items?: unknown };
    if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items)) return items;
  }
  return [document];
}

function firstLine(text: string): string {
  // yaml's messages end their first line with ':' before a source excerpt.
  return text.split('\n', 1)[0]!.trim().replace(/:$/, '');
}

/**
 * Hand-written checks that give the schema's result for well-formed objects and undefined
 * otherwise (then zod decides): for the inputs that come by the ten thousand.
 */
const fastPaths = new Map<z.ZodType, (value: unknown) => unknown>([[bareMetalHostSchema, fastBareMetalHost]]);

/**
 * Validates each object against a schema. The message says which object (by position and
 * name) and which field is wrong, e.g. `item 3 (host-2): spec.bootMACAddress: expected a string`.
 */
export function validateObjects<T extends z.ZodType>(objects: readonly unknown[], schema: T): z.infer<T>[] {
  const fastPath = fastPaths.get(schema);
  return objects.map((object, index) => {
    const fast = fastPath?.(object);
    if (fast !== undefined) return fast as z.infer<T>;
    const parsed = schema.safeParse(object);
    if (parsed.success) return parsed.data as z.infer<T>;
    const name = (object as { metadata?: { name?: unknown } } | null)?.metadata?.name;
    const which =
      objects.length > 1 ? `item ${index + 1}${typeof name === 'string' ? ` (${name})` : ''}: ` : '';
    throw invalid('InvalidObject', `${which}${describeIssues(parsed.error)}`);
  });
}

/** Exactly one object of a schema, e.g. the Provisioning of `bpa render`. */
export function parseSingleObject<T extends z.ZodType>(text: string, schema: T, what: string): z.infer<T> {
  const objects = parseObjects(text);
  if (objects.length !== 1)
    throw invalid('InvalidDocument', `expected exactly one ${what}, found ${objects.length} objects`);
  const parsed = schema.safeParse(objects[0]);
  if (!parsed.success) throw invalid('InvalidObject', `invalid ${what}: ${describeIssues(parsed.error)}`);
  return parsed.data as z.infer<T>;
}
