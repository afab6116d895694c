// Declarative command-line options: one table per command drives parsing (node:util
// parseArgs, strict), validation into typed values with DistVaeError reasons, and --help
// text (which the documentation's CLI reference is generated from).

import { parseArgs } from 'node:util';
import { type Size2 } from '../entries/families.js';
import { didYouMean, reason, refuse } from '../errors.js';
import { type Reason } from '../index.js';

export interface OptionSpec {
  name: string;
  kind: 'string' | 'boolean';
  /** Placeholder shown in help, e.g. `HxW`, `N`, `PATH`. */
  value?: string;
  description: string;
  /** Shown in help; applied by the command, not by the parser. */
  defaultText?: string;
}

export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** True when stderr is a terminal (progress bars are drawn only then). */
  stderrIsTTY: boolean;
  /** Aborted on SIGINT/SIGTERM: a command stops its work, ends its ranks and returns. */
  signal?: AbortSignal;
  /** Sets how long this invocation may wind down after a signal (a queue decode removing its jobs from Redis). */
  setSignalGrace?: (ms: number) => void;
}

export interface CommandSpec {
  name: string;
  summary: string;
  usage: string[];
  options: OptionSpec[];
  /** Extra help text (examples, notes). */
  details?: string[];
  /**
   * How long the command may take to wind down after SIGINT/SIGTERM before the process exits
   * anyway (default 1500 ms: a signal takes effect within 2 s).
   */
  signalGraceMs?: number;
  /** The command stops on the signal by itself and its exit code stands (a worker that drains exits 0). */
  drainsOnSignal?: boolean;
  run(args: Args, io: CliIO): Promise<number>;
}

export const JSON_OPTION: OptionSpec = { name: 'json', kind: 'boolean', description: 'print exactly one JSON object on stdout' };

/** Parsed options with typed, validating readers. Reasons accumulate; `done()` throws them. */
export class Args {
  private readonly reasons: Reason[] = [];

  constructor(
    readonly values: Record<string, string | boolean | undefined>,
    readonly positionals: string[],
  ) {}

  has(name: string): boolean {
    return this.values[name] !== undefined;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }

  string(name: string, opts: { required?: boolean } = {}): string | undefined {
    const v = this.values[name];
    if (v === '') {
      // An empty value (`--ranks ""`, an unset shell variable) is a mistake, never the default.
      this.reasons.push(reason('EMPTY_VALUE', `--${name}`, v, 'a non-empty value', `--${name} is given an empty value`));
      return undefined;
    }
    if (v === undefined) {
      if (opts.required) this.reasons.push(reason('MISSING_OPTION', `--${name}`, v, 'a value', `--${name} is required`));
      return undefined;
    }
    return String(v);
  }

  choice<T extends string>(name: string, choices: readonly T[], opts: { required?: boolean } = {}): T | undefined {
    const v = this.string(name, opts);
    if (v === undefined) return undefined;
    if (!choices.includes(v as T)) {
      this.reasons.push(
        reason(
          'INVALID_CHOICE',
          `--${name}`,
          v,
          `one of ${choices.join(', ')}`,
          `--${name} ${JSON.stringify(v)} is not one of ${choices.join(', ')}`,
        ),
      );
      return undefined;
    }
    return v as T;
  }

  /** An integer in [min (default 1), max]; a reason naming the range otherwise. */
  int(name: string, opts: { required?: boolean; min?: number; max?: number } = {}): number | undefined {
    const min = opts.min ?? 1;
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`;
    return this.numeric(name, opts, range, (v) => {
      const n = /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
      return Number.isSafeInteger(n) && n >= min && n <= max ? n : null;
    });
  }

  /** A finite number, at least `min` when given; a reason naming the range otherwise. */
  number(name: string, opts: { required?: boolean; min?: number } = {}): number | undefined {
    const range = opts.min !== undefined ? `a number >= ${opts.min}` : 'a finite number';
    return this.numeric(name, opts, range, (v) => {
      const n = Number(v);
      return Number.isFinite(n) && (opts.min === undefined || n >= opts.min) ? n : null;
    });
  }

  /** The value of --name as `parse` reads it (null: out of `range`, which the reason names). */
  private numeric(name: string, opts: { required?: boolean }, range: string, parse: (v: string) => number | null): number | undefined {
    const v = this.string(name, opts);
    if (v === undefined) return undefined;
    const n = parse(v);
    if (n === null) this.reasons.push(reason('INVALID_NUMBER', `--${name}`, v, range, `--${name} ${JSON.stringify(v)} is not ${range}`));
    return n ?? undefined;
  }

  /** `HxW` (height × width, docs/design.md §9), or a single `N` for N×N; integers >= min. */
  size(name: string, opts: { required?: boolean; min?: number } = {}): Size2 | undefined {
    const v = this.string(name, opts);
    if (v === undefined) return undefined;
    const min = opts.min ?? 1;
    const m = /^(\d+)(?:x(\d+))?$/.exec(v.trim());
    const size = m ? { height: Number(m[1]), width: Number(m[2] ?? m[1]) } : null;
    if (!size || size.height < min || size.width < min) {
      this.reasons.push(
        reason(
          'INVALID_SIZE',
          `--${name}`,
          v,
          `HEIGHTxWIDTH with integers >= ${min} (e.g. 512x512)`,
          `--${name} ${JSON.stringify(v)} is not HEIGHTxWIDTH with integers >= ${min}`,
        ),
      );
      return undefined;
    }
    return size;
  }

  /** Records refusals found elsewhere (the library's checks of what the options ask for). */
  add(...reasons: Reason[]): void {
    this.reasons.push(...reasons);
  }

  /** Records a cross-option refusal. */
  refuse(field: string, value: unknown, valid: string, message: string): void {
    this.reasons.push(reason('INVALID_ARGUMENT', field, value, valid, message));
  }

  /** Throws every problem found so far as one INVALID_ARGUMENT error. */
  done(): void {
    if (this.reasons.length > 0) {
      // An option read twice (shared readers) reports its problem once.
      refuse(
        'INVALID_ARGUMENT',
        this.reasons.filter((r, i) => this.reasons.findIndex((q) => q.message === r.message) === i),
      );
    }
  }
}

/**
 * A string option's value that starts with '-' (`--ranks -1`) is taken as its value, not as an
 * option, unless it names one of the command's options: node's parseArgs would call it ambiguous
 * and hide the real problem (a negative number) behind advice about `--ranks=-1`.
 */
function joinDashValues(spec: CommandSpec, argv: readonly string[]): string[] {
  const kinds = new Map(spec.options.map((o) => [o.name, o.kind]));
  const isOption = (token: string) => token === '-h' || token === '--help' || kinds.has(token.replace(/^--/, '').replace(/=.*$/s, ''));
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    const next = argv[i + 1];
    if (
      token.startsWith('--') &&
      !token.includes('=') &&
      kinds.get(token.slice(2)) === 'string' &&
      next !== undefined &&
      next.startsWith('-') &&
      !(next.startsWith('--') && isOption(next))
    ) {
      out.push(`${token}=${next}`);
      i++;
    } else out.push(token);
  }
  return out;
}

export function parseCommandArgs(spec: CommandSpec, argv: string[]): Args {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const o of spec.options) options[o.name] = { type: o.kind };
  const known = spec.options.map((o) => `--${o.name}`).join(', ');
  let parsed: ReturnType<
    typeof parseArgs<{ args: string[]; options: typeof options; strict: true; allowPositionals: false; tokens: true }>
  >;
  try {
    parsed = parseArgs({ args: joinDashValues(spec, argv), options, strict: true, allowPositionals: false, tokens: true });
  } catch (e) {
    const message = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    const unknown = /^Unknown option '(--[^'=]+)/.exec(message)?.[1];
    const hint = unknown
      ? didYouMean(
          unknown,
          spec.options.map((o) => `--${o.name}`),
        )
      : '';
    // The options are listed once, in the reason's valid range (stderr prints it under the message).
    return refuse(
      'INVALID_ARGUMENT',
      reason(
        'BAD_ARGUMENTS',
        'argv',
        argv.join(' '),
        `options of "distvae ${spec.name}": ${known}`,
        `${message}${hint}; see distvae ${spec.name} --help`,
      ),
    );
  }
  // The last of two values would win silently (`--out a.png --out b.png`): say which one was meant instead.
  const seen = new Map<string, string[]>();
  for (const t of parsed.tokens) {
    if (t.kind !== 'option') continue;
    const values = seen.get(t.name) ?? [];
    values.push(t.value ?? 'true');
    seen.set(t.name, values);
  }
  for (const [name, values] of seen) {
    if (values.length > 1)
      refuse(
        'INVALID_ARGUMENT',
        reason(
          'OPTION_REPEATED',
          `--${name}`,
          values,
          'given once',
          `--${name} is given ${values.length} times (${values.map((v) => JSON.stringify(v)).join(', ')}): give it once`,
        ),
      );
  }
  return new Args(parsed.values as Record<string, string | boolean | undefined>, parsed.positionals);
}

export function commandHelp(spec: CommandSpec): string {
  const lines = [`distvae ${spec.name} — ${spec.summary}`, '', 'Usage:', ...spec.usage.map((u) => `  ${u}`), '', 'Options:'];
  const label = (o: OptionSpec) => `--${o.name}${o.value ? ` ${o.value}` : ''}`;
  const width = Math.max(...spec.options.map((o) => label(o).length), 6) + 2;
  for (const o of spec.options) {
    lines.push(`  ${label(o).padEnd(width)}${o.description}${o.defaultText ? ` (default: ${o.defaultText})` : ''}`);
  }
  lines.push(`  ${'--help'.padEnd(width)}show this help`);
  if (spec.details) lines.push('', ...spec.details);
  return lines.join('\n') + '\n';
}
