/**
 * The function's name, in the definition (index.ts) and as the `component` of the Events and the
 * `source` of the events that software-install and its install Job (install-job/) write: the Job
 * runs without the definition, so the name is a module of its own rather than a handler's context.
 */
export const functionName = 'software-install';
