// `distvae/bench`: what `distvae bench` runs — one benchmark cell of decode arms on this machine,
// its report (JSON, Markdown, SVG) and the description of the machine it ran on.

export { ARM_NAMES, runBenchCell, type ArmName, type BenchCell, type BenchCellOptions } from '../bench/arms.js';
export { benchReport, writeBenchReport, type BenchReport } from '../bench/report.js';
export { describeRun, type RunDescription } from '../bench/machine.js';
