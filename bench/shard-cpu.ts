// CPU seconds of a row-sharded band run on one in-process rank (issue 14 item 3: what the stage
// sessions, the halo and GroupNorm steps cost, load-independently): the decoder's band models
// run through StagedDecoder with a one-rank communicator, 1 intra-op thread, for N decodes of
// one latent; prints user + system CPU seconds and wall seconds per decode, and the process's
// peak RSS. Under load, compare CPU seconds, not wall time.
//
// `--compare FILE` (raw float32 of the whole decode, e.g. bench/memory.ts's out-whole-512-1.f32)
// adds the largest |Δ| of the last decode against it.
//
//   npx tsx bench/shard-cpu.ts --vae /work/meas/sd --latent /work/meas/z64.npy [--runs 2] [--threads 1] [--compare FILE]

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadVae } from '../src/decode/vae.js';
import { readNpy } from '../src/io/npy.js';
import type { Tensor } from '../src/tensor.js';
import { StagedDecoder, type BandComm } from '../src/strategies/shard/staged-decoder.js';

const { values: args } = parseArgs({
  options: {
    vae: { type: 'string' },
    latent: { type: 'string' },
    runs: { type: 'string', default: '2' },
    threads: { type: 'string', default: '1' },
    compare: { type: 'string' },
  },
});
if (!args.vae || !args.latent) throw new Error('usage: bench/shard-cpu.ts --vae DIR --latent FILE.npy [--runs N] [--threads T]');
const threads = Number(args.threads);
const vae = await loadVae(args.vae, { threads });
const latent = readNpy(args.latent);
// One rank, one band over the whole image: no halo joins (as the rank program builds it).
const decoder = await StagedDecoder.create(vae.decoderModel(), { intraOpThreads: threads }, { halos: false });
const one: BandComm = {
  rank: 0,
  size: 1,
  send: () => undefined,
  recv: () => Promise.reject(new Error('one rank receives nothing')),
  allReduce: async (d) => d,
  allGather: async (d) => [d],
};
const geometry = { latentRows: latent.dims[2]!, latentCols: latent.dims[3]!, bands: [{ rank: 0, start: 0, end: latent.dims[2]! }] };
let out: Tensor = latent;
for (let run = 0; run < Number(args.runs); run++) {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  out = await decoder.decodeBand(one, latent, geometry);
  const used = process.cpuUsage(cpu);
  console.log(
    JSON.stringify({
      run,
      dims: out.dims,
      cpuSeconds: (used.user + used.system) / 1e6,
      userSeconds: used.user / 1e6,
      systemSeconds: used.system / 1e6,
      wallSeconds: (performance.now() - t0) / 1000,
    }),
  );
}
if (args.compare) {
  const whole = new Float32Array(new Uint8Array(readFileSync(args.compare)).buffer);
  let maxAbs = 0;
  for (let i = 0; i < whole.length; i++) maxAbs = Math.max(maxAbs, Math.abs(whole[i]! - out.data[i]!));
  console.log(
    JSON.stringify({ maxAbsVsWhole: whole.length === out.data.length ? maxAbs : `length ${out.data.length} vs ${whole.length}` }),
  );
}
const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({ peakRssMiB: hwm ? Number(hwm[1]) / 1024 : null }));
await decoder.dispose();
await vae.dispose();
