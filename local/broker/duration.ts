import { invalid } from '../../shared/errors.js';

/**
 * ISO-8601 durations as Knative's delivery spec uses them (`PT0.2S`, `PT1S`, `PT1M`, `P1DT2H`).
 * Knative parses them with rickb777/date/period; years and months are rejected here because a
 * retry delay measured in calendar months has no fixed length.
 */
const durationPattern =
  /^P(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;

const msPer = { week: 604_800_000, day: 86_400_000, hour: 3_600_000, minute: 60_000, second: 1_000 };

/** Milliseconds in an ISO-8601 duration; throws BpaError InvalidDuration when it is not one. */
export function parseIsoDuration(text: string): number {
  const match = durationPattern.exec(text.trim());
  if (!match || text.trim() === 'P' || text.trim().endsWith('T')) {
    throw invalid('InvalidDuration', `"${text}" is not an ISO-8601 duration such as PT0.2S, PT1S or PT1M`);
  }
  const [, weeks, days, hours, minutes, seconds] = match;
  const part = (value: string | undefined, unit: number) =>
    value === undefined ? 0 : Number(value.replace(',', '.')) * unit;
  return Math.round(
    part(weeks, msPer.week) +
      part(days, msPer.day) +
      part(hours, msPer.hour) +
      part(minutes, msPer.minute) +
      part(seconds, msPer.second),
  );
}
