import { invalid } from '../../shared/errors.js';
import type { RawEvent } from '../../shared/cloudevents/http-codec.js';
import type { SubscriptionsApiFilter } from './knative-objects.js';

/**
 * Trigger filtering as knative/eventing's `pkg/eventfilter` does it: three results, and only
 * `fail` stops a delivery (`none` — "this filter had nothing to say" — lets the event through).
 */
export type FilterResult = 'pass' | 'fail' | 'none';
export type EventFilter = (event: RawEvent) => FilterResult;

const coreAttributes = new Set([
  'specversion',
  'type',
  'source',
  'subject',
  'id',
  'time',
  'dataschema',
  'schemaurl',
  'datacontenttype',
  'datamediatype',
  'datacontentencoding',
]);

/**
 * An attribute's value and whether it is present (`attributes.LookupAttribute`): core attributes
 * are always present (empty string when unset), extensions only when set.
 */
export function lookupAttribute(event: RawEvent, name: string): { value: string; present: boolean } {
  const { attributes } = event;
  if (name === 'schemaurl') return { value: attributes.dataschema ?? '', present: true };
  if (name === 'datamediatype') {
    const media = (attributes.datacontenttype ?? '').split(';')[0]!.trim();
    return { value: media, present: true };
  }
  if (coreAttributes.has(name)) return { value: attributes[name] ?? '', present: true };
  const value = attributes[name];
  return value === undefined ? { value: '', present: false } : { value, present: true };
}

/** `filter.attributes`: every key present and equal; `""` means present with a non-empty value. */
export function attributesFilter(attributes: Record<string, string> | undefined): EventFilter {
  if (attributes === undefined) return () => 'none';
  const entries = Object.entries(attributes);
  return (event) => {
    for (const [name, wanted] of entries) {
      const { value, present } = lookupAttribute(event, name);
      if (!present || (wanted === '' && value === '')) return 'fail';
      if (wanted !== '' && wanted !== value) return 'fail';
    }
    return 'pass';
  };
}

const mapFilter =
  (entries: [string, string][], matches: (value: string, wanted: string) => boolean): EventFilter =>
  (event) => {
    for (const [name, wanted] of entries) {
      const { value, present } = lookupAttribute(event, name);
      if (!present || !matches(value, wanted)) return 'fail';
    }
    return 'pass';
  };

/** `all`: fails on the first failure, else the last filter's result (`none` when empty). */
export function allFilter(filters: EventFilter[]): EventFilter {
  if (filters.length === 1) return filters[0]!;
  return (event) => {
    let result: FilterResult = 'none';
    for (const filter of filters) {
      result = filter(event);
      if (result === 'fail') return 'fail';
    }
    return result;
  };
}

/** `any`: passes on the first pass, else the last filter's result (`none` when empty). */
export function anyFilter(filters: EventFilter[]): EventFilter {
  if (filters.length === 1) return filters[0]!;
  return (event) => {
    let result: FilterResult = 'none';
    for (const filter of filters) {
      result = filter(event);
      if (result === 'pass') return 'pass';
    }
    return result;
  };
}

/** `not`: swaps pass and fail; `none` stays `none`. */
export function notFilter(filter: EventFilter): EventFilter {
  return (event) => {
    const result = filter(event);
    return result === 'pass' ? 'fail' : result === 'fail' ? 'pass' : 'none';
  };
}

const dialects = ['exact', 'prefix', 'suffix', 'all', 'any', 'not', 'cesql'] as const;

/**
 * Compiles one `filters` element, rejecting what Knative's webhook rejects (no dialect or more
 * than one, empty attribute names or values). CE SQL is not implemented: it is rejected here
 * with a clear error rather than silently passing or failing events.
 */
export function compileSubscriptionsApiFilter(filter: SubscriptionsApiFilter, path = 'filters'): EventFilter {
  const present = dialects.filter((dialect) => {
    const value = filter[dialect];
    if (value === undefined) return false;
    if (Array.isArray(value)) return value.length > 0;
    if (typeof value === 'object') return Object.keys(value).length > 0;
    return value !== '';
  });
  if (present.length !== 1) {
    throw invalid(
      'InvalidTriggerFilter',
      `${path}: each filter must set exactly one dialect of ${dialects.join(', ')} (found ${present.length === 0 ? 'none' : present.join(', ')})`,
    );
  }
  const dialect = present[0]!;
  switch (dialect) {
    case 'exact':
    case 'prefix':
    case 'suffix': {
      const entries = Object.entries(filter[dialect]!);
      for (const [name, value] of entries) {
        if (name === '' || value === '') {
          throw invalid(
            'InvalidTriggerFilter',
            `${path}.${dialect}: attribute names and values must be non-empty`,
          );
        }
      }
      const match =
        dialect === 'exact'
          ? (value: string, wanted: string) => value === wanted
          : dialect === 'prefix'
            ? (value: string, wanted: string) => value.startsWith(wanted)
            : (value: string, wanted: string) => value.endsWith(wanted);
      return mapFilter(entries, match);
    }
    case 'all':
      return allFilter(
        filter.all!.map((inner, i) => compileSubscriptionsApiFilter(inner, `${path}.all[${i}]`)),
      );
    case 'any':
      return anyFilter(
        filter.any!.map((inner, i) => compileSubscriptionsApiFilter(inner, `${path}.any[${i}]`)),
      );
    case 'not':
      return notFilter(compileSubscriptionsApiFilter(filter.not!, `${path}.not`));
    case 'cesql':
      throw invalid(
        'UnsupportedTriggerFilter',
        `${path}.cesql: CE SQL filters are not supported by the embedded broker; use exact, prefix, suffix, all, any or not`,
      );
  }
}

/** A Trigger's filter: non-empty `filters` replaces `filter`; neither passes everything. */
export function compileTriggerFilter(spec: {
  filter?: { attributes?: Record<string, string> } | undefined;
  filters?: SubscriptionsApiFilter[] | undefined;
}): EventFilter {
  if (spec.filters && spec.filters.length > 0) {
    return allFilter(spec.filters.map((filter, i) => compileSubscriptionsApiFilter(filter, `filters[${i}]`)));
  }
  if (spec.filter) return attributesFilter(spec.filter.attributes);
  return () => 'none';
}
