// The fallback ladder: when a decode runs out of memory anyway (onnxruntime's allocation error,
// a rank process killed by the OOM killer), the next plan down the policy that fits the budget
// is tried, each attempt reported; when the ladder ends the decode fails with LADDER_EXHAUSTED
// naming every attempt. The caller runs each attempt in rank processes so the coordinator
// survives an OOM kill; this module only sequences them.

import { DistVaeError, isDistVaeError, reason } from '../errors.js';
import { describePlan, type PlanAlternative } from './policy.js';
import type { MemoryPlan } from './model.js';

/** One attempt of a ladder, as `decode --json` reports it. */
export interface LadderAttempt {
  strategy: MemoryPlan['strategy'];
  window: MemoryPlan['window'] | null;
  overlap: MemoryPlan['overlap'] | null;
  ranks: number;
  predictedPeakBytes: number;
  outcome: 'decoded' | 'out-of-memory';
  /** The failure, for an attempt that ran out of memory. */
  error?: string;
}

/** Most attempts a ladder makes (the choice and the next plans down). */
export const MAX_LADDER_ATTEMPTS = 4;

const MEMORY_FAILURE = [/alloc/i, /out of memory/i, /bad_alloc/i, /ENOMEM/, /SIGKILL/, /exit(?:ed with)? code 137/, /heap limit/i];

/** Whether an error is a decode running out of memory (an allocation failure or an OOM-killed rank). */
export function isMemoryFailure(e: unknown): boolean {
  const texts: string[] = [];
  for (let x: unknown = e, depth = 0; x && depth < 5; depth++) {
    texts.push(x instanceof Error ? x.message : String(x));
    x = x instanceof Error ? x.cause : undefined;
  }
  return texts.some((t) => MEMORY_FAILURE.some((re) => re.test(t)));
}

function attemptOf(alt: PlanAlternative, outcome: LadderAttempt['outcome'], error?: string): LadderAttempt {
  return {
    strategy: alt.plan.strategy,
    window: alt.plan.window ?? null,
    overlap: alt.plan.overlap ?? null,
    ranks: alt.plan.ranks,
    predictedPeakBytes: alt.prediction.peakBytes,
    outcome,
    ...(error !== undefined ? { error } : {}),
  };
}

/**
 * Runs `run` on each rung in order until one decodes; an attempt that fails for memory moves to
 * the next rung, any other failure is rethrown as it is. Throws LADDER_EXHAUSTED (a runtime
 * failure, exit 3) when every rung ran out of memory.
 */
export async function runLadder<T>(
  rungs: readonly PlanAlternative[],
  run: (alt: PlanAlternative, index: number) => Promise<T>,
  onAttempt?: (attempt: LadderAttempt, index: number) => void,
): Promise<{ result: T; attempts: LadderAttempt[]; rung: PlanAlternative }> {
  const attempts: LadderAttempt[] = [];
  for (const [i, alt] of rungs.entries()) {
    try {
      const result = await run(alt, i);
      const attempt = attemptOf(alt, 'decoded');
      attempts.push(attempt);
      onAttempt?.(attempt, i);
      return { result, attempts, rung: alt };
    } catch (e) {
      if (!isMemoryFailure(e)) throw e;
      const attempt = attemptOf(alt, 'out-of-memory', isDistVaeError(e) ? `${e.code}: ${e.message}` : (e as Error).message);
      attempts.push(attempt);
      onAttempt?.(attempt, i);
    }
  }
  const tried = rungs.map((r) => describePlan(r.plan)).join(', then ');
  const r = reason(
    'LADDER_EXHAUSTED',
    'plan',
    tried,
    'a plan that decodes within the memory this machine has',
    `every plan of the fallback ladder ran out of memory (${tried})`,
  );
  throw Object.assign(new DistVaeError('LADDER_EXHAUSTED', r.message, { reasons: [r] }), { attempts });
}

/** The ladder's rungs from a budget choice: the choice, then the plans after it that fit, up to MAX_LADDER_ATTEMPTS. */
export function ladderRungs(alternatives: readonly PlanAlternative[], choice: PlanAlternative): PlanAlternative[] {
  const from = alternatives.indexOf(choice);
  if (from < 0) throw new Error('ladderRungs: the choice is not one of the alternatives');
  return [choice, ...alternatives.slice(from + 1).filter((a) => a.fits)].slice(0, MAX_LADDER_ATTEMPTS);
}
