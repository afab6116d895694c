// Typed errors. Every failure the library reports is a DistVaeError with a stable code and,
// where a request was refused, the list of reasons: which field, the offending value, the
// valid range, and a sentence a person can act on. The CLI prints these; it never prints a
// stack trace for them.

export interface Reason {
  /** Stable machine-readable code, e.g. `WINDOW_NOT_MULTIPLE`. */
  code: string;
  /** The request field the reason is about, e.g. `window.height`. */
  field: string;
  /** The offending value as given. */
  value: unknown;
  /** The valid range or set, in words, e.g. `a multiple of 8 in [8, 2048]`. */
  valid: string;
  /** One sentence naming the value and the valid range. */
  message: string;
}

export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'PLAN_REFUSED'
  | 'UNKNOWN_FAMILY'
  | 'CONFIG_INVALID'
  | 'FILE_NOT_FOUND'
  | 'FILE_INVALID'
  | 'WEIGHTS_MISMATCH'
  | 'UNSAFE_PICKLE'
  | 'TENSOR_INVALID'
  | 'PROVIDER_UNAVAILABLE'
  | 'RUNTIME_FAILED'
  | 'RANK_FAILED'
  | 'ABORTED'
  | 'TIMEOUT'
  | 'TRANSPORT_FAILED'
  | 'UNSUPPORTED'
  /** No plan fits the memory budget (a refusal, like PLAN_REFUSED). */
  | 'BUDGET_EXCEEDED'
  /** Every plan of a fallback ladder ran out of memory (a runtime failure). */
  | 'LADDER_EXHAUSTED';

export class DistVaeError extends Error {
  readonly code: ErrorCode;
  readonly reasons: Reason[];
  override readonly cause: unknown;

  constructor(code: ErrorCode, message: string, options: { reasons?: Reason[]; cause?: unknown } = {}) {
    super(message);
    this.name = 'DistVaeError';
    this.code = code;
    this.reasons = options.reasons ?? [];
    this.cause = options.cause;
  }

  toJSON(): { code: ErrorCode; message: string; reasons: Reason[] } {
    return { code: this.code, message: this.message, reasons: this.reasons };
  }
}

export function reason(code: string, field: string, value: unknown, valid: string, message?: string): Reason {
  return { code, field, value, valid, message: message ?? `${field} = ${formatValue(value)} is invalid: expected ${valid}` };
}

/** Throws an INVALID_ARGUMENT error carrying one reason. */
export function invalidArgument(field: string, value: unknown, valid: string, message?: string): never {
  const r = reason('INVALID_ARGUMENT', field, value, valid, message);
  throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
}

export function isDistVaeError(e: unknown): e is DistVaeError {
  return e instanceof DistVaeError;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
