/** Console styling for the demo: colours only on a terminal, plain text otherwise (tests, logs). */
export interface DemoOutput {
  line(text?: string): void;
  step(index: number, total: number, title: string): void;
  ok(text: string): void;
  fail(text: string): void;
  info(text: string): void;
  dim(text: string): void;
}

export function demoOutput(write: (text: string) => void, colour: boolean): DemoOutput {
  const paint = (code: string) => (text: string) => (colour ? `\u001b[${code}m${text}\u001b[0m` : text);
  const bold = paint('1');
  const green = paint('32');
  const red = paint('31');
  const grey = paint('90');
  const cyan = paint('36');
  return {
    line: (text = '') => write(`${text}\n`),
    step: (index, total, title) => write(`\n${cyan(`[${index}/${total}]`)} ${bold(title)}\n`),
    ok: (text) => write(`      ${green('✓')} ${text}\n`),
    fail: (text) => write(`      ${red('✗')} ${text}\n`),
    info: (text) => write(`      ${text}\n`),
    dim: (text) => write(`      ${grey(text)}\n`),
  };
}
