// What a decode's arithmetic and traffic cost in seconds, per execution provider: a table the
// time model (time-model.ts) multiplies its terms by. The entries between the generated markers
// are written by `npx tsx bench/time-model.ts calibrate --write` from the measured matrix of
// bench/results/time-model.json; rerun that matrix on a quiet machine to refit them.

/** Seconds per unit of each time-model term, for one execution provider. */
export interface TimeCalibration {
  provider: string;
  /** Seconds every decode takes beyond its terms (starting the decode, assembling, writing). */
  fixedSeconds: number;
  /** Seconds per 10⁹ multiply-accumulates (convolutions, matmuls) on one thread. */
  secondsPerGmac: number;
  /** Seconds per 10⁹ bytes of activations the other ops write, on one thread. */
  secondsPerGbyte: number;
  /** Seconds per decoder session run (a tile, a frame step). */
  secondsPerRun: number;
  /** Seconds per step of a row-sharded rank (a stage run, a collective). */
  secondsPerStage: number;
  /** Seconds per 10⁹ bytes a rank sends or receives (halos, statistics, keys and values, tile edges). */
  secondsPerExchangedGbyte: number;
  /** Seconds per 10⁹ bytes of weights a rank loads and opens sessions over. */
  secondsPerLoadedGbyte: number;
  /** Speed-up each intra-op thread beyond the first adds (1: linear). */
  threadEfficiency: number;
  /** How the numbers were measured. */
  measured: string;
}

// <generated> by `npx tsx bench/time-model.ts calibrate --write` from bench/results/time-model.json; do not edit by hand.
/** The seconds per unit of each provider's time terms, fitted to its measured matrix. */
export const TIME_CALIBRATIONS: Readonly<Record<string, TimeCalibration>> = {
  cpu: {
    provider: 'cpu',
    fixedSeconds: 1.5687161738091813,
    secondsPerGmac: 0.0064783160694385465,
    secondsPerGbyte: 0.5,
    secondsPerRun: 0.05,
    secondsPerStage: 0.043632887413165636,
    secondsPerExchangedGbyte: 1,
    secondsPerLoadedGbyte: 22.913407194999422,
    threadEfficiency: 1.0000000000000002,
    measured:
      'fitted by `npx tsx bench/time-model.ts calibrate` (non-negative least squares on the relative error, thread efficiency on a 0.05 grid) to the 11 cells of bench/results/time-model.json (2026-12-05, linux x64, 23.5 GiB, AMD EPYC (2 cores), Node v20.20.2; 8 of 11 cells within ±25 %, largest |error| 56.7 %); the load during the matrix is in the report (uptime per run)',
  },
};
// </generated>

/** The time calibration of a provider, or the CPU's (with `calibrated: false`) where none was measured yet. */
export function timeCalibrationOf(provider: string): { calibration: TimeCalibration; calibrated: boolean } {
  const own = TIME_CALIBRATIONS[provider];
  return own ? { calibration: own, calibrated: true } : { calibration: TIME_CALIBRATIONS['cpu']!, calibrated: false };
}
