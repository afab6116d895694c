// Activation peaks of the fused decoder graph, one process per measurement (issue 14 item 2):
// loads a VAE, builds its fused session, decodes one latent `--repeat` times and prints the
// process's peak RSS (VmHWM) after the session is built and after every decode, with the CPU
// seconds (user + system) each decode took — a fair proxy for work on a loaded machine, where
// wall time is not. Session knobs are passed through so each can be measured on its own; the
// graph is the tile runner's (channel parts on; `--no-parts` for the plain spelling).
//
//   node --expose-gc --import tsx bench/activation-peak.ts --vae DIR --latent Z.npy [--repeat N] [--threads 2]
//                                    [--no-arena] [--mem-pattern] [--config key=value ...]
//                                    [--optimized PATH] [--no-parts]
//
// Run 1024² cases under `flock /work/meas/bigmem.lock` on a shared machine.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { readVaeSource } from '../src/sources/vae-source.js';
import { readNpy } from '../src/io/npy.js';
import { createSession } from '../src/runtime/session.js';
import { buildKlDecoderGraph, klDecoderParams } from '../src/families/autoencoder-kl/graph.js';
import { attentionChunksFor } from '../src/families/autoencoder-kl/runtime.js';
import { bindWeights } from '../src/weights/bind.js';

const { values } = parseArgs({
  options: {
    vae: { type: 'string' },
    latent: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    threads: { type: 'string', default: '2' },
    'no-arena': { type: 'boolean', default: false },
    'mem-pattern': { type: 'boolean', default: false },
    config: { type: 'string', multiple: true, default: [] },
    optimized: { type: 'string' },
    'no-parts': { type: 'boolean', default: false },
  },
});

const mib = (kib: number) => Math.round(kib / 1024);
function status(field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}
const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;

const { config, weights } = await readVaeSource({ path: values.vae! });
const latent = readNpy(values.latent!);
const bound = bindWeights(klDecoderParams(config), weights);
const chunks = attentionChunksFor(latent.dims);
const model = buildKlDecoderGraph(config, bound, { attentionChunks: chunks, channelParts: !values['no-parts'] }).toModel();
// Reading the weights' values (the finite check, the content hash) leaves JS garbage; collect it
// (with --expose-gc) so the session's RSS is the baseline the decode's peak is read against.
(globalThis as { gc?: () => void }).gc?.();
const extra = Object.fromEntries(values.config!.map((kv) => kv.split('=') as [string, string]));
const session = await createSession(model, {
  intraOpThreads: Number(values.threads),
  ...(values['no-arena'] ? { enableCpuMemArena: false } : {}),
  ...(values['mem-pattern'] ? { enableMemPattern: true } : {}),
  ...(Object.keys(extra).length ? { sessionConfig: extra } : {}),
  ...(values.optimized ? { optimizedModelPath: values.optimized } : {}),
});
console.log(
  `session: rss ${mib(status('VmRSS'))} MiB, peak ${mib(status('VmHWM'))} MiB (latent ${latent.dims.join('x')}, ${chunks} attention chunk(s))`,
);
for (let i = 0; i < Number(values.repeat); i++) {
  const cpu0 = process.cpuUsage();
  const out = await session.run({ latent });
  const cpu = cpuSeconds(process.cpuUsage(cpu0));
  console.log(
    `decode ${i + 1}: peak ${mib(status('VmHWM'))} MiB, rss ${mib(status('VmRSS'))} MiB, cpu ${cpu.toFixed(1)} s, sample[0] ${out['sample']!.data[0]}`,
  );
}
await session.dispose();
