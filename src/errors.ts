// Typed errors. Every failure the library reports is a DistVaeError with a stable code and,
// where a request was refused, the list of reasons: which field, the offending value, the
// valid range, and a sentence a person can act on. Both vocabularies are closed unions, so a
// new code is a deliberate edit here. Codes fall in two kinds: refusals (the request or its
// inputs are wrong; nothing ran) and runtime failures (a run started and something broke) —
// the CLI exits 2 for the first and 3 for the second. It never prints a stack trace for them.

/** Why one field of a request was refused (stable, machine-readable). */
export type ReasonCode =
  | ErrorCode
  // Command line
  | 'BAD_ARGUMENTS'
  | 'INVALID_CHOICE'
  | 'INVALID_NUMBER'
  | 'INVALID_SIZE'
  | 'MISSING_OPTION'
  | 'EMPTY_VALUE'
  | 'OPTION_REPEATED'
  | 'UNKNOWN_COMMAND'
  // Rank groups and transports
  | 'CONCURRENCY_INVALID'
  | 'DEVICES_INVALID'
  | 'DEVICE_INVALID'
  | 'DURATION_INVALID'
  | 'ISOLATION_INVALID'
  | 'LOCK_DURATION_INVALID'
  | 'QUEUE_INVALID'
  | 'RANKS_INVALID'
  | 'RANKS_TOO_MANY'
  | 'RANKS_OVER_BUDGET'
  | 'REDIS_URL_INVALID'
  | 'STALLED_INTERVAL_INVALID'
  | 'THREADS_INVALID'
  // Families, configs, sources and weights
  | 'CONFIG_FIELD_INVALID'
  | 'CONFIG_INCONSISTENT'
  | 'CONFIG_NOT_JSON'
  | 'CONFIG_NOT_OBJECT'
  | 'DECODER_UNSUPPORTED'
  | 'FAMILY_CONFLICT'
  | 'FAMILY_REQUIRED'
  | 'FRACTIONAL_SCALE'
  | 'NO_DECODER'
  | 'NO_DECODER_GRAPH'
  | 'NO_ENCODER'
  | 'NO_ENCODER_GRAPH'
  | 'SEED_INVALID'
  | 'TAE_HALF_MISSING'
  | 'UNKNOWN_CLASS_NAME'
  | 'WEIGHTS_NOT_FOUND'
  | 'WEIGHT_MISSING'
  | 'WEIGHT_SHAPE'
  | 'WEIGHT_UNEXPECTED'
  | 'WEIGHT_NOT_FINITE'
  | 'WEIGHTS_TOO_LARGE'
  | 'CACHE_PATH_ESCAPES'
  | 'CONFIG_NOT_FOUND'
  | 'NOT_IN_CACHE'
  | 'NO_VAE_COMPONENT'
  | 'SOURCE_OPTION'
  | 'SUBFOLDER_INVALID'
  | 'VARIANT_INVALID'
  | 'NO_SCALING_FACTOR'
  | 'SCALING_INVALID'
  | 'NO_LATENT_STATISTICS'
  | 'LATENT_STATISTICS_INVALID'
  | 'NO_LATENT_DISTRIBUTION'
  // Plans, tiling and buckets
  | 'BUCKETS_EMPTY'
  | 'BUCKET_INVALID'
  | 'DECODE_SETTING_UNUSED'
  | 'DEFAULT_PLAN_NOT_WHOLE_LATENT'
  | 'FRAMES_INVALID'
  | 'FRAMES_ON_IMAGE_FAMILY'
  | 'FRAME_OVERLAP_INVALID'
  | 'FRAME_OVERLAP_NOT_BELOW_WINDOW'
  | 'FRAME_WINDOW_INVALID'
  | 'NO_BUCKET_HOLDS_IMAGE'
  | 'NO_TEMPORAL_TILING'
  | 'OVERLAP_INVALID'
  | 'OVERLAP_NOT_BELOW_WINDOW'
  | 'OVERLAP_NOT_WHOLE_LATENT'
  | 'OVERLAP_ON_UNTILED_AXIS'
  | 'PLAN_FAMILY_MISMATCH'
  | 'PLAN_WINDOW_CHANGED'
  | 'POLICY_INVALID'
  | 'SIZE_INVALID'
  | 'SIZE_NOT_WHOLE_LATENT'
  | 'WINDOW_INVALID'
  | 'WINDOW_NOT_WHOLE_LATENT'
  | 'WINDOW_TOO_SMALL'
  // Strategies and decoder calls
  | 'ATTENTION_MEMORY'
  | 'ATTENTION_READS_MORE'
  | 'GROUP_NORM_UNSTAGED'
  | 'NONLOCAL_OP'
  | 'SHARD_VIDEO'
  | 'STRATEGY_INVALID'
  | 'STRATEGY_NEEDS_LOCAL_GROUP'
  | 'TILE_TOO_SMALL'
  | 'TOO_MANY_RANKS'
  // Pages (distvae/web): backends, inputs, device limits
  | 'BACKEND_FIXED'
  | 'FETCH_FAILED'
  | 'INPUT_TOO_LARGE'
  | 'TENSOR_EXCEEDS_DEVICE_LIMIT'
  // Memory budgets and the memory model
  | 'BUDGET_TOO_SMALL'
  | 'MEMORY_MODEL_INPUT'
  | 'MEMORY_MODEL_UNSUPPORTED'
  | 'MEMORY_SIZE_INVALID'
  | 'NO_MEMORY_CALIBRATION'
  | 'NO_MEMORY_MODEL'
  // Tensors, images and video
  | 'BIT_DEPTH'
  | 'IMAGE_TOO_LARGE'
  | 'NO_LATENTS'
  | 'OUTPUT_UNWRITABLE'
  | 'PNG_SIZE'
  | 'NPY_SHAPE'
  | 'FFMPEG_MISSING'
  | 'FPS_INVALID'
  | 'IMAGE_CHANNELS'
  | 'IMAGE_EMPTY'
  | 'IMAGE_FORMAT_UNSUPPORTED'
  | 'IMAGE_RANK'
  | 'IMAGE_SIZE'
  | 'IMAGE_TOO_SMALL'
  | 'LATENT_BATCH'
  | 'LATENT_CHANNELS'
  | 'LATENT_EMPTY'
  | 'LATENT_RANK'
  | 'LATENT_SIZE'
  | 'VIDEO_EXTENSION'
  | 'INTERNAL';

/** One reason a request is refused: which field, its value, what would be valid, and a sentence. */
export interface Reason {
  /** Stable machine-readable code, e.g. `WINDOW_NOT_WHOLE_LATENT`. */
  code: ReasonCode;
  /** The request field the reason is about, e.g. `window.height`. */
  field: string;
  /** The offending value as given. */
  value: unknown;
  /** The valid range or set, in words, e.g. `a multiple of 8 in [8, 2048]`. */
  valid: string;
  /** One sentence naming the value and the valid range. */
  message: string;
}

/** The `code` of a DistVaeError: what kind of failure it is (the CLI maps it to an exit code, docs/design.md §9). */
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
  /** A decode or encode produced NaN or ±Infinity (a runtime failure, named by tile / band and position). */
  | 'NON_FINITE_OUTPUT'
  | 'RANK_FAILED'
  | 'ABORTED'
  | 'TIMEOUT'
  | 'TRANSPORT_FAILED'
  /** Every plan of a fallback ladder ran out of memory (a runtime failure). */
  | 'LADDER_EXHAUSTED'
  /** No plan fits the memory budget (a refusal, like PLAN_REFUSED). */
  | 'BUDGET_EXCEEDED'
  | 'UNSUPPORTED';

/**
 * The codes of runtime failures: a run started and something broke (a decoder call, a rank, the
 * transport, a deadline, every fallback of a ladder, output that came out non-finite). ABORTED is neither a failure nor a
 * refusal: the caller stopped the run (the CLI exits 130, or 143 after SIGTERM); a signal that
 * fired because a deadline passed is a TIMEOUT (abortedError). Every other code is a refusal of
 * the request or its inputs, made before work starts.
 */
export const RUNTIME_FAILURE_CODES: readonly ErrorCode[] = [
  'RUNTIME_FAILED',
  'NON_FINITE_OUTPUT',
  'RANK_FAILED',
  'TRANSPORT_FAILED',
  'TIMEOUT',
  'LADDER_EXHAUSTED',
];

/** Whether `code` reports a runtime failure rather than a refusal or a cancellation (see RUNTIME_FAILURE_CODES). */
export function isRuntimeFailure(code: ErrorCode): boolean {
  return RUNTIME_FAILURE_CODES.includes(code);
}

/**
 * The error for work stopped by an aborted `signal`, with its reason's message when it has one:
 * ABORTED, or TIMEOUT when the signal fired at a deadline (`AbortSignal.timeout`'s TimeoutError).
 */
export function abortedError(signal: AbortSignal, what = 'decode'): DistVaeError {
  const cause: unknown = signal.reason;
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  if (cause instanceof Error && cause.name === 'TimeoutError') return new DistVaeError('TIMEOUT', `${what} timed out${detail}`, { cause });
  return new DistVaeError('ABORTED', `${what} aborted${detail}`, { cause });
}

/** Throws ABORTED when `signal` is aborted (a no-op without one). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortedError(signal);
}

/**
 * The one error type of the library: a stable `code`, a message, and for a refused request the
 * `reasons` (field, offending value, valid range). `isDistVaeError(e)` tells it apart.
 */
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

/**
 * The name among `names` a mistyped `value` most likely meant, as a message suffix
 * (` (did you mean "tae"?)`), or '' when none is close: a name the value starts with (`taef2`
 * → `tae`), else the nearest by edit distance within a third of the value's length (at least 2).
 */
export function didYouMean(value: string, names: readonly string[]): string {
  const v = value.toLowerCase();
  const prefixed = names.filter((n) => n.length >= 2 && v.startsWith(n.toLowerCase())).sort((a, b) => b.length - a.length)[0];
  let best = prefixed;
  if (best === undefined) {
    let bestDistance = Math.max(2, Math.floor(v.length / 3)) + 1;
    for (const n of names) {
      const d = editDistance(v, n.toLowerCase());
      if (d < bestDistance) [best, bestDistance] = [n, d];
    }
  }
  return best === undefined ? '' : ` (did you mean ${JSON.stringify(best)}?)`;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    previous = row;
  }
  return previous[b.length]!;
}

/** A reason; its message defaults to one naming the field, the value and the valid range. */
export function reason(code: ReasonCode, field: string, value: unknown, valid: string, message?: string): Reason {
  return { code, field, value, valid, message: message ?? `${field} = ${formatValue(value)} is invalid: expected ${valid}` };
}

/**
 * Refuses with `reasons`: throws a DistVaeError of `code` carrying them, its message theirs
 * (joined by '; ', after `options.prefix` when given). Callers that collect reasons throw only
 * when there are any: `if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons)`.
 */
export function refuse(code: ErrorCode, reasons: Reason | readonly Reason[], options: { prefix?: string; cause?: unknown } = {}): never {
  const list = Array.isArray(reasons) ? [...(reasons as readonly Reason[])] : [reasons as Reason];
  const joined = list.map((r) => r.message).join('; ');
  throw new DistVaeError(code, options.prefix !== undefined ? `${options.prefix}: ${joined}` : joined, {
    reasons: list,
    ...(options.cause !== undefined ? { cause: options.cause } : {}),
  });
}

/** Throws an INVALID_ARGUMENT error carrying one reason. */
export function invalidArgument(field: string, value: unknown, valid: string, message?: string): never {
  refuse('INVALID_ARGUMENT', reason('INVALID_ARGUMENT', field, value, valid, message));
}

/** Whether `e` is a DistVaeError. */
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
