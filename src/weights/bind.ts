// Strict binding of a loaded weight map to the parameters a decoder graph expects: every
// expected key present with exactly the expected shape, and no key left over except under
// the family's ignored prefixes (e.g. `encoder.`, `quant_conv.`). All problems are reported
// at once, one reason per key, so a wrong checkpoint is diagnosed in one run.

import { DistVaeError, reason, type Reason } from '../errors.js';
import type { Tensor } from '../tensor.js';

/** What binding needs of a parameter spec (a ParamSpec satisfies it). */
export interface ExpectedParam {
  readonly name: string;
  readonly dims: readonly number[];
}

export interface BindOptions {
  /** Keys starting with any of these are skipped, unless a parameter expects them. */
  ignorePrefixes?: readonly string[];
  /** Names the weight file in messages. */
  source?: string;
}

/** Messages quoted in the error's text; the full list is always in `reasons`. */
const MESSAGES_SHOWN = 8;

/**
 * A 0-d parameter stored with shape [1]: writers without 0-d tensors (numpy-based safetensors
 * writers) store scalars that way, and the value is the same.
 */
function storedScalar(t: Shaped, param: ExpectedParam): boolean {
  return param.dims.length === 0 && t.dims.length === 1 && t.dims[0] === 1;
}

/** Anything with a shape: a tensor, or a file header's entry before its values are read. */
export interface Shaped {
  readonly dims: readonly number[];
}

/** Returns the expected tensors in `expected` order, or throws WEIGHTS_MISMATCH naming every problem. */
export function bindWeights(
  expected: readonly ExpectedParam[],
  weights: ReadonlyMap<string, Tensor>,
  options: BindOptions = {},
): Map<string, Tensor> {
  checkBinding(expected, weights, options);
  return new Map(expected.map((param) => [param.name, asParam(weights.get(param.name)!, param)]));
}

/** The tensor with the parameter's own shape (a 0-d parameter stored as [1] becomes 0-d). */
export function asParam(t: Tensor, param: ExpectedParam): Tensor {
  return storedScalar(t, param) ? { dims: [], data: t.data } : t;
}

/**
 * Checks shapes only (a file's header suffices, before any value is read): throws
 * WEIGHTS_MISMATCH naming every missing, unexpected or wrongly shaped key.
 */
export function checkBinding(expected: readonly ExpectedParam[], weights: ReadonlyMap<string, Shaped>, options: BindOptions = {}): void {
  const source = options.source ?? 'the weights';
  const ignore = options.ignorePrefixes ?? [];
  const expectedNames = new Set(expected.map((p) => p.name));
  const reasons: Reason[] = [];
  let matched = 0;
  for (const param of expected) {
    const want = `[${param.dims.join(', ')}]`;
    const t = weights.get(param.name);
    if (!t) {
      reasons.push(
        reason('WEIGHT_MISSING', param.name, null, `a tensor of shape ${want}`, `${param.name} (shape ${want}) is missing from ${source}`),
      );
    } else if (storedScalar(t, param)) {
      matched++;
    } else if (t.dims.length !== param.dims.length || t.dims.some((d, i) => d !== param.dims[i])) {
      const got = `[${t.dims.join(', ')}]`;
      reasons.push(
        reason(
          'WEIGHT_SHAPE',
          param.name,
          t.dims,
          `shape ${want}`,
          `${param.name} has shape ${got} in ${source}, the decoder expects ${want}`,
        ),
      );
    } else {
      matched++;
    }
  }
  for (const [name, t] of weights) {
    if (expectedNames.has(name) || ignore.some((prefix) => name.startsWith(prefix))) continue;
    const ignored = ignore.length ? ` or under an ignored prefix (${ignore.join(', ')})` : '';
    reasons.push(
      reason(
        'WEIGHT_UNEXPECTED',
        name,
        t.dims,
        `a key the decoder expects${ignored}`,
        `${name} (shape [${t.dims.join(', ')}]) in ${source} is not a parameter of this decoder`,
      ),
    );
  }
  if (reasons.length === 0) return;

  const count = (code: string): number => reasons.filter((r) => r.code === code).length;
  const hint = matched === 0 && weights.size > 0 ? ' No expected key matched: wrong family, or keys under another prefix?' : '';
  const shown = reasons.slice(0, MESSAGES_SHOWN).map((r) => r.message);
  if (reasons.length > MESSAGES_SHOWN) shown.push(`... and ${reasons.length - MESSAGES_SHOWN} more`);
  throw new DistVaeError(
    'WEIGHTS_MISMATCH',
    `${source} does not match the decoder: ${count('WEIGHT_MISSING')} missing, ${count('WEIGHT_UNEXPECTED')} unexpected, ` +
      `${count('WEIGHT_SHAPE')} wrongly shaped.${hint} ${shown.join('; ')}`,
    { reasons },
  );
}
