// Container entry point: the function server on HOST:PORT with this function's definition.
import { runFunction } from '../../shared/server/run-function.js';
import { definition } from './index.js';

await runFunction(definition);
