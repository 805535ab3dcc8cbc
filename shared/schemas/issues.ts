import type { z } from 'zod';

/**
 * Turns zod issues into one human sentence per problem: where (a dotted path such as
 * `spec.masters[0].master-1.mac-address`) and what is wrong. zod's defaults ("Invalid input:
 * expected string, received undefined") are rewritten into plain words.
 */
export function describeIssues(error: z.ZodError, maxIssues = 5): string {
  const lines = error.issues.slice(0, maxIssues).map(describeIssue);
  const more = error.issues.length - maxIssues;
  if (more > 0) lines.push(`and ${more} more problem${more === 1 ? '' : 's'}`);
  return lines.join('; ');
}

export function describeIssue(issue: z.core.$ZodIssue): string {
  const where = formatPath(issue.path);
  return where ? `${where}: ${issueText(issue)}` : issueText(issue);
}

export function formatPath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else text += text ? `.${String(key)}` : String(key);
  }
  return text;
}

function issueText(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type': {
      if (/received undefined$/.test(issue.message)) return 'is required';
      const received = /received (\w+)$/.exec(issue.message)?.[1];
      return `expected ${article(issue.expected)}${received ? `, got ${article(received)}` : ''}`;
    }
    case 'invalid_value':
      if (issue.message.startsWith('Invalid input'))
        return `must be ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}`;
      return issue.message;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}`;
    default:
      return issue.message;
  }
}

function article(type: string): string {
  if (type === 'null' || type === 'undefined') return type;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
