import { invalid } from '../../shared/errors.js';

/**
 * A small 5-field cron matcher (minute hour day-of-month month day-of-week) for PingSource
 * schedules: `*`, `*\/n`, `a-b`, `a-b/n`, lists, month and weekday names, `7` = Sunday, and
 * Knative's `CRON_TZ=<zone>` prefix. Day-of-month and day-of-week OR together when both are
 * restricted, as in Vixie cron and robfig/cron.
 */
export interface CronSchedule {
  minutes: Set<number>;
  hours: Set<number>;
  daysOfMonth: Set<number>;
  months: Set<number>;
  daysOfWeek: Set<number>;
  domRestricted: boolean;
  dowRestricted: boolean;
  timezone?: string;
}

const monthNames = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const dayNames = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

function parseField(
  field: string,
  min: number,
  max: number,
  names: string[] = [],
  nameBase = 0,
): Set<number> {
  const values = new Set<number>();
  const value = (text: string) => {
    const index = names.indexOf(text.toUpperCase());
    const number = index >= 0 ? index + nameBase : Number(text);
    if (!Number.isInteger(number) || number < min || number > max) {
      throw invalid('InvalidSchedule', `"${text}" is out of range ${min}-${max}`);
    }
    return number;
  };
  for (const part of field.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw invalid('InvalidSchedule', `bad step in "${part}"`);
    let from: number;
    let to: number;
    if (range === '*') [from, to] = [min, max];
    else if (range!.includes('-')) {
      const [a, b] = range!.split('-');
      [from, to] = [value(a!), value(b!)];
    } else {
      from = value(range!);
      to = stepText === undefined ? from : max;
    }
    if (from > to) throw invalid('InvalidSchedule', `empty range "${part}"`);
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values;
}

export function parseCron(expression: string, timezone?: string): CronSchedule {
  let text = expression.trim();
  let zone = timezone;
  const tz = /^(?:CRON_TZ|TZ)=(\S+)\s+(.*)$/.exec(text);
  if (tz) {
    zone = tz[1];
    text = tz[2]!;
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5) {
    throw invalid(
      'InvalidSchedule',
      `"${expression}" must have 5 fields: minute hour day-of-month month day-of-week`,
    );
  }
  const [minute, hour, dom, month, dow] = fields as [string, string, string, string, string];
  const daysOfWeek = parseField(dow, 0, 7, dayNames);
  if (daysOfWeek.has(7)) daysOfWeek.add(0);
  if (zone) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: zone });
    } catch {
      throw invalid('InvalidSchedule', `unknown time zone "${zone}"`);
    }
  }
  return {
    minutes: parseField(minute, 0, 59),
    hours: parseField(hour, 0, 23),
    daysOfMonth: parseField(dom, 1, 31),
    months: parseField(month, 1, 12, monthNames, 1),
    daysOfWeek,
    domRestricted: dom !== '*' && !dom.startsWith('*/'),
    dowRestricted: dow !== '*' && !dow.startsWith('*/'),
    ...(zone ? { timezone: zone } : {}),
  };
}

/** The wall-clock fields of `date` in a time zone (UTC when none). */
function fieldsIn(date: Date, timezone: string | undefined) {
  if (!timezone) {
    return {
      minute: date.getUTCMinutes(),
      hour: date.getUTCHours(),
      day: date.getUTCDate(),
      month: date.getUTCMonth() + 1,
      weekday: date.getUTCDay(),
    };
  }
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    minute: 'numeric',
    hour: 'numeric',
    day: 'numeric',
    month: 'numeric',
    weekday: 'short',
  }).formatToParts(date);
  const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '';
  return {
    minute: Number(get('minute')),
    hour: Number(get('hour')),
    day: Number(get('day')),
    month: Number(get('month')),
    weekday: dayNames.indexOf(get('weekday').toUpperCase()),
  };
}

/** Whether the schedule fires in the minute containing `date`. */
export function cronMatches(schedule: CronSchedule, date: Date): boolean {
  const f = fieldsIn(date, schedule.timezone);
  if (!schedule.minutes.has(f.minute) || !schedule.hours.has(f.hour) || !schedule.months.has(f.month))
    return false;
  const domOk = schedule.daysOfMonth.has(f.day);
  const dowOk = schedule.daysOfWeek.has(f.weekday);
  if (schedule.domRestricted && schedule.dowRestricted) return domOk || dowOk;
  return domOk && dowOk;
}
