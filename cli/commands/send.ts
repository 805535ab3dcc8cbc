import type { CliCommand } from '../command.js';

// PLACEHOLDER: replaced by the issue that owns `bpa send`.
export const sendCommand: CliCommand = {
  name: 'send',
  summary: 'not implemented yet',
  usage: 'Usage: bpa send\n',
  run: async (_argv, io) => {
    io.stderr('bpa send: not implemented yet\n');
    return 1;
  },
};
