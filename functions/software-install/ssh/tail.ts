/**
 * Keeps the last lines of a byte stream in bounded memory: at most `maxLines` complete lines
 * plus one partial line, each cut to `maxLineLength` characters. A chatty `apt-get` cannot grow
 * the function's memory however much it prints.
 */
export class LineTail {
  private readonly lines: string[] = [];
  private partial = '';
  private readonly decoder = new TextDecoder('utf-8');

  constructor(
    private readonly maxLines = 20,
    private readonly maxLineLength = 512,
  ) {}

  push(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const parts = (this.partial + text).split(/\r?\n/);
    this.partial = this.cut(parts.pop() ?? '');
    for (const line of parts.slice(-this.maxLines)) this.keep(line);
  }

  /** The kept lines, oldest first, with the trailing partial line if any. */
  snapshot(): string[] {
    return this.partial === '' ? [...this.lines] : [...this.lines, this.partial].slice(-this.maxLines);
  }

  private keep(line: string): void {
    this.lines.push(this.cut(line));
    if (this.lines.length > this.maxLines) this.lines.shift();
  }

  private cut(line: string): string {
    return line.length > this.maxLineLength ? line.slice(0, this.maxLineLength) + '…' : line;
  }
}
