import type { CliCommand } from '../command.js';

// PLACEHOLDER: replaced by the issue that owns `bpa demo`.
export const demoCommand: CliCommand = {
  name: 'demo',
  summary: 'not implemented yet',
  usage: 'Usage: bpa demo\n',
  run: async (_argv, io) => {
    io.stderr('bpa demo: not implemented yet\n');
    return 1;
  },
};
