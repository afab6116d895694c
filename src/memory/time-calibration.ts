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
  /** Seconds per 10⁹ bytes the convolutions and matmuls write, on one thread (their cost per output beside the cost per MAC). */
  secondsPerConvGbyte: number;
  /** Seconds per 10⁹ multiply-accumulates of memory-bound convolutions (operands past `cacheBytes`), added to their MACs' and not divided by threads. */
  secondsPerSpilledGmac: number;
  /** Seconds per 10⁹ bytes an arena-less stage session's ops write (a row-sharded rank: each a fresh allocation). */
  secondsPerUnpooledGbyte: number;
  /** A MAC node's operand bytes (input and output) past which it is memory-bound. */
  cacheBytes: number;
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
    fixedSeconds: 0.6686676103399115,
    secondsPerGmac: 0,
    secondsPerGbyte: 0,
    secondsPerConvGbyte: 1.4698678478500693,
    secondsPerSpilledGmac: 0.021505671550268012,
    secondsPerUnpooledGbyte: 2.102062375591704,
    cacheBytes: 33554432,
    secondsPerRun: 0.05,
    secondsPerStage: 0,
    secondsPerExchangedGbyte: 1,
    secondsPerLoadedGbyte: 31.188466278778833,
    threadEfficiency: 1.0000000000000002,
    measured:
      'fitted by `npx tsx bench/time-model.ts calibrate --zero secondsPerGbyte,secondsPerStage` (non-negative least squares on the relative error, thread efficiency on a 0.05 grid, cache size on 16/24/32/48/64/96/128 MiB) to the 11 cells of bench/results/time-model.json (2026-12-05, linux x64, 23.5 GiB, AMD EPYC (2 cores), Node v20.20.2; 11 of 11 cells within ±25 %, largest |error| 7.5 %; left out of the fit one at a time: 11 of 11 within ±25 %, largest 21.2 %); the load during the matrix is in the report (uptime per run)',
  },
};
// </generated>

/** The time calibration of a provider, or the CPU's (with `calibrated: false`) where none was measured yet. */
export function timeCalibrationOf(provider: string): { calibration: TimeCalibration; calibrated: boolean } {
  const own = TIME_CALIBRATIONS[provider];
  return own ? { calibration: own, calibrated: true } : { calibration: TIME_CALIBRATIONS['cpu']!, calibrated: false };
}
