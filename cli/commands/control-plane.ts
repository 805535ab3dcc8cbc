import type { CliCommand } from '../command.js';

// PLACEHOLDER: replaced by the issue that owns `bpa control-plane`.
export const controlPlaneCommand: CliCommand = {
  name: 'control-plane',
  summary: 'not implemented yet',
  usage: 'Usage: bpa control-plane\n',
  run: async (_argv, io) => {
    io.stderr('bpa control-plane: not implemented yet\n');
    return 1;
  },
};
