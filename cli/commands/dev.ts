import type { CliCommand } from '../command.js';

// PLACEHOLDER: replaced by the issue that owns `bpa dev`.
export const devCommand: CliCommand = {
  name: 'dev',
  summary: 'not implemented yet',
  usage: 'Usage: bpa dev\n',
  run: async (_argv, io) => {
    io.stderr('bpa dev: not implemented yet\n');
    return 1;
  },
};
