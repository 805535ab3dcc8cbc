import type { CliCommand } from '../command.js';

// PLACEHOLDER: replaced by the issue that owns `bpa render`.
export const renderCommand: CliCommand = {
  name: 'render',
  summary: 'not implemented yet',
  usage: 'Usage: bpa render\n',
  run: async (_argv, io) => {
    io.stderr('bpa render: not implemented yet\n');
    return 1;
  },
};
