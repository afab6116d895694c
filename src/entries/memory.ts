// `distvae/memory`: the memory model's parts beneath the root's budget calls — plan kinds and
// terms, per-process predictions, the policy's order, plan search within a budget, the
// calibration per provider, the plan a VAE's tiling amounts to and the tiling a plan needs, and
// the machine's memory; the time model and its calibration per provider.

export {
  hasMemoryModel,
  predictTileRun,
  type MemoryPlan,
  type MemoryStrategy,
  type MemoryTerms,
  type ProcessPrediction,
  type RankPrediction,
} from '../memory/model.js';
export {
  classOf,
  describePlan,
  describePrediction,
  fitsBudget,
  namedAlternative,
  policyPlans,
  toneDrift,
  type ToneDrift,
  type ChooseOptions,
  type PlanClass,
  type PolicyPlan,
} from '../memory/policy.js';
export {
  formatSeconds,
  predictTime,
  secondsOfTerms,
  timeTerms,
  type TimeModelOptions,
  type TimePrediction,
  type TimeTerms,
} from '../memory/time-model.js';
export { TIME_CALIBRATIONS, timeCalibrationOf, type TimeCalibration } from '../memory/time-calibration.js';
export { planOfTiling, tilingOfPlan } from '../memory/apply.js';
export { checkRequestFits, providerLimits, tensorLimitBytes } from '../memory/device-limits.js';
export { searchWithinBudget, type BudgetedCandidate, type BudgetedSearch } from '../memory/budget-search.js';
export { CALIBRATIONS, calibrationOf, type RuntimeCalibration } from '../memory/calibration.js';
export type { LadderAttempt } from '../memory/ladder.js';
export { availableMemory, DEFAULT_BUDGET_SHARE, peakRssBytes } from '../runtime/memory-budget.js';
