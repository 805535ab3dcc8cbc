/** One benchmark: prints its own figures through `print` (listed in bench/run.ts). */
export interface BenchModule {
  name: string;
  run: (print: (line: string) => void) => Promise<void> | void;
}
