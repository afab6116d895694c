// `distvae decode`: latents (.npy / .safetensors) → decoded sample (.npy, exactly diffusers'
// `decode(z).sample`), image (.png with the family's value mapping) or video (.mp4 / .webm
// through the system ffmpeg, same mapping). Arguments, files, the latent shape, the tile plan,
// the row-sharding bands and ffmpeg's presence are all checked before the decoder is built.
// --strategy picks the spatial strategy (decode-strategy.ts).

import { extname } from 'node:path';
import { checkFiniteOutput, throwIfAborted } from '../../decode/engine.js';
import { checkLatents } from '../../decode/latents.js';
import { loadVae, type Vae } from '../../decode/vae.js';
import { vaeSpecOfSource } from '../../sources/vae-source.js';
import type { RankGroup } from '../../ranks/group.js';
import { ISOLATIONS, localGroup } from '../../ranks/local/index.js';
import { queueGroup } from '../../ranks/queue/index.js';
import { DEFAULT_QUEUE } from '../../ranks/queue/protocol.js';
import { scheduleGrid } from '../../plan/metrics.js';
import { splitBands } from '../../strategies/shard/bands.js';
import type { VaeSpec } from '../../families/types.js';
import { writeSamplePng } from '../../io/image.js';
import { checkFfmpeg, DEFAULT_FPS, isVideoPath, VIDEO_EXTENSIONS, writeSampleVideo } from '../../io/video.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { tileGrid } from '../../plan/grid.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { formatCollectives } from '../locality-format.js';
import { checkOutputPath } from '../output-path.js';
import { progressBar } from '../progress.js';
import { checkRankMemory } from '../rank-memory.js';
import { FAMILY_OPTIONS, TILING_OPTIONS, applyTilingOptions } from '../tiling-options.js';
import { REDIS_OPTIONS } from './redis-options.js';
import { RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';
import { installStrategy, STRATEGIES } from './decode-strategy.js';

/** How long an interrupted queue decode may take to remove its jobs from Redis. */
const QUEUE_SIGNAL_GRACE_MS = 8000;

const OUTPUT_EXTENSIONS = ['.npy', '.png', ...VIDEO_EXTENSIONS];

export const decodeCommand: CommandSpec = {
  name: 'decode',
  summary: 'decode latents to a sample (.npy), an image (.png) or a video (.mp4/.webm), whole or tiled',
  usage: [
    'distvae decode --vae PATH [--family F] --latents X.npy --out Y.(npy|png|mp4|webm) [--window HxW --overlap HxW | --full] [--threads N] [--json]',
    'distvae decode ... --ranks R [--isolation thread|process] [--threads N per rank]',
    'distvae decode ... --strategy shard --ranks R   (row sharding: equals the whole decode)',
    'distvae decode ... --strategy exact-tile [--window HxW --overlap HxW] [--ranks R]   (local decoders only)',
    'distvae decode ... --redis URL [--queue NAME] [--ranks R] [--queue-timeout MS]   (tiles decoded by `distvae worker`s)',
    'distvae decode --synthetic --family F [--config config.json] [--seed N] --latents X.npy --out Y.png',
  ],
  options: [
    ...VAE_SOURCE_OPTIONS,
    ...FAMILY_OPTIONS,
    { name: 'latents', kind: 'string', value: 'PATH', description: 'latents as diffusers vae.decode receives them: .npy, or .safetensors with a tensor named "latents"' },
    { name: 'out', kind: 'string', value: 'PATH', description: ".npy: the raw decode(z).sample; .png: an image with the family's value mapping (one file per image/frame); .mp4/.webm: a video (one per batch item) through the system ffmpeg" },
    ...TILING_OPTIONS,
    { name: 'full', kind: 'boolean', description: 'one decoder call over everything: no spatial and no temporal tiling' },
    { name: 'bit-depth', kind: 'string', value: '8|16', description: 'PNG bit depth', defaultText: '8' },
    { name: 'fps', kind: 'string', value: 'N', description: 'frames per second of .mp4/.webm output', defaultText: String(DEFAULT_FPS) },
    {
      name: 'decode-timestep',
      kind: 'string',
      value: 'T',
      description: "timestep fed to a timestep-conditioned decoder (LTX-2 with timestep_conditioning); overrides the config's decode_timestep",
      defaultText: "the config's, else 0 as in diffusers' pipeline",
    },
    ...RUNTIME_OPTIONS,
    {
      name: 'strategy',
      kind: 'string',
      value: 'tile|shard|exact-tile',
      description:
        "tile: the plan's tiles, blended (diffusers); shard: every layer split into bands of latent rows across the ranks, with halos, GroupNorm statistics and attention keys/values exchanged (equals the whole decode; no plan); exact-tile: the plan's tiles decoded with the analysed halo and cropped (equals the whole decode; decoders without GroupNorm/attention only)",
      defaultText: 'tile',
    },
    { name: 'ranks', kind: 'string', value: 'R', description: 'ranks the tiles (or bands) are dealt to (by work): local ranks, or with --redis the runs (jobs) workers take; --threads is per rank', defaultText: '1; with --redis the workers listening, at least 2' },
    { name: 'isolation', kind: 'string', value: 'thread|process', description: 'ranks as worker threads, or as child processes (a crash stays in its rank; per-rank peak RSS)', defaultText: 'thread' },
    ...REDIS_OPTIONS,
    { name: 'queue-timeout', kind: 'string', value: 'MS', description: 'with --redis: fail when no worker takes or finishes a tile for this long', defaultText: '120000' },
    JSON_OPTION,
  ],
  details: [
    "Without --window/--overlap the family's default plan is used with tiling on (it tiles only when the latent exceeds",
    'the window). With --json: { shape, tiles, seconds, ranks: [...] } where seconds is the decode time without loading.',
    'With --ranks R > 1 the tiles are decoded on R local ranks (each loads the VAE once) and ranks[] gives each rank\'s',
    'tiles, load (latent area), seconds and, with --isolation process, peak RSS. At most one rank per tile is started',
    '(ranksRequested and a note say so when fewer than R ran); more ranks than the cores or the memory can hold are refused.',
    'Decoder calls always run on a rank (one thread without --ranks): SIGINT/SIGTERM stop a decode within about 2 s,',
    'end its ranks, write nothing and exit 130/143.',
    'With --strategy shard each rank decodes a band of at least one latent row (refused otherwise), the JSON adds',
    'strategy, bands, collectives ({ send, allReduce, allGather, ...: { calls, bytes } } summed over ranks) and each',
    "rank's band and collectives; tiles is 0. With --strategy exact-tile a decoder the locality analysis finds nonlocal",
    'is refused with the ops named (see distvae analyze).',
    'With --redis URL the tiles go to `distvae worker` processes serving the same --queue (on any machine, each with its',
    'own copy of the VAE); --ranks is then the number of runs (jobs) a decode is dealt into, by default the number of',
    'workers listening (at least 2). Redis is reached before the VAE is loaded; nothing of the decode stays in Redis.',
  ],
  async run(args, io) {
    const latentsPath = args.string('latents', { required: true });
    const out = args.string('out', { required: true });
    const bitDepth = args.choice('bit-depth', ['8', '16'] as const);
    const fps = args.number('fps');
    const decodeTimestep = args.number('decode-timestep');
    const video = out !== undefined && isVideoPath(out);
    if (out !== undefined && !OUTPUT_EXTENSIONS.includes(extname(out).toLowerCase())) {
      args.refuse('--out', out, `a path ending in ${OUTPUT_EXTENSIONS.join(' or ')}`, `--out ${out}: the output must end in ${OUTPUT_EXTENSIONS.join(' or ')}`);
    }
    if (fps !== undefined && !(fps > 0)) args.refuse('--fps', fps, 'a number > 0', `--fps ${fps}: frames per second must be > 0`);
    if (fps !== undefined && !video) args.refuse('--fps', fps, 'only with --out .mp4/.webm', '--fps applies only to video output (--out .mp4 or .webm)');
    if (bitDepth !== undefined && out !== undefined && extname(out).toLowerCase() !== '.png') args.refuse('--bit-depth', bitDepth, 'only with --out .png', `--bit-depth applies only to PNG output; --out ${out} is not a .png`);
    if (out !== undefined) checkOutputPath(args, out, { latents: latentsPath, vae: args.string('vae'), config: args.string('config') });
    const strategy = args.choice('strategy', STRATEGIES) ?? 'tile';
    // Row sharding has no tile plan; exact tiles need the plan's tiles.
    const planOptions = ['window', 'overlap', 'frame-window', 'frame-overlap', 'no-frame-tiling', 'full'];
    const refusedWith = strategy === 'shard' ? planOptions : strategy === 'exact-tile' ? ['full'] : [];
    for (const name of refusedWith) {
      if (args.has(name)) args.refuse(`--${name}`, args.values[name], `absent with --strategy ${strategy}`, `--${name} cannot be combined with --strategy ${strategy} (${strategy === 'shard' ? 'row sharding splits every layer into bands, it has no tile plan' : 'halo-exact tiles are the plan\'s tiles'})`);
    }
    if (args.flag('full') && strategy !== 'shard') {
      for (const name of ['window', 'overlap', 'frame-window', 'frame-overlap']) {
        if (args.has(name)) args.refuse(`--${name}`, args.values[name], 'absent with --full', `--${name} cannot be combined with --full (one decoder call over everything)`);
      }
    }
    const given = readVaeSourceOptions(args);
    // The decode timestep is a config setting (DESIGN §9); the option overrides config.json's.
    const source = decodeTimestep === undefined ? given : { ...given, config: { ...(given.config ?? {}), decode_timestep: decodeTimestep } };
    const loadOptions = readLoadOptions(args);
    const ranks = args.int('ranks', { min: 1, max: 1024 }) ?? 1;
    const isolation = args.choice('isolation', ISOLATIONS) ?? 'thread';
    const redis = args.string('redis');
    const queue = args.string('queue');
    const queueTimeout = args.int('queue-timeout', { min: 1 });
    if (redis === undefined) {
      for (const name of ['queue', 'queue-timeout']) if (args.has(name)) args.refuse(`--${name}`, args.values[name], 'only with --redis', `--${name} applies only to a queue decode (--redis URL)`);
    } else {
      if (strategy !== 'tile') args.refuse('--strategy', strategy, 'tile with --redis', `--strategy ${strategy} needs local ranks; a queue decode deals blended tiles (--strategy tile)`);
      if (args.has('ranks') && ranks < 2) args.refuse('--ranks', ranks, 'an integer >= 2 with --redis', `--ranks ${ranks}: a queue decode deals its tiles into at least 2 runs`);
      if (args.has('isolation')) args.refuse('--isolation', isolation, 'absent with --redis', '--isolation applies to local ranks; with --redis the tiles are decoded by `distvae worker` processes');
    }
    if (redis === undefined && args.has('isolation') && !args.has('ranks') && strategy !== 'shard') {
      args.refuse('--isolation', isolation, 'with --ranks R', '--isolation says how --ranks are run; without --ranks the decode runs on one decoder thread');
    }
    args.done();

    const latents = readLatents(latentsPath!);
    // A plan-only view checks the latent and the plan before any weights are read, when the
    // architecture is known without them (a bare weights file names its variant only in its keys).
    const spec = vaeSpecOfSource(source);
    const configure = (vae: VaeSpec) => {
      const latent = checkLatents(vae, latents, latentsPath);
      if (video && !vae.geometry.fiveDimLatents) {
        args.refuse('--out', out, '.npy or .png for an image family', `--out ${out}: ${vae.family.name} decodes images, not video; write .npy or .png`);
        args.done();
      }
      if (strategy === 'shard') splitBands(latent.height, ranks, vae.geometry.spatialRatio);
      else if (args.flag('full')) vae.tiling = { ...vae.tiling, enabled: false, frames: vae.tiling.frames ? { ...vae.tiling.frames, enabled: false } : null };
      else applyTilingOptions(args, vae, undefined);
      return latent;
    };
    // Ranks without work are never started (each would load the VAE): blended and halo-exact tiles
    // use at most one rank per tile of a chunk; row sharding refuses more ranks than latent rows.
    const ranksFor = (vae: VaeSpec, latent: ReturnType<typeof checkLatents>) => (strategy === 'shard' ? ranks : Math.min(ranks, tileGrid(vae, latent, { spatialOnly: true }).tiles.length));
    const planned = spec ? ranksFor(spec, configure(spec)) : null;
    if (planned !== null && redis === undefined) checkRankMemory(spec!, planned, ranks, loadOptions);
    if (video) checkFfmpeg();

    // Local decodes always run their decoder calls on ranks (one thread without --ranks): a call in
    // onnxruntime blocks its thread, and the CLI's own thread must stay free to act on SIGINT/SIGTERM.
    const startLocal = (n: number) => {
      const local = localGroup({ ranks: n, isolation, ...(loadOptions.threads !== undefined ? { threadsPerRank: loadOptions.threads } : {}) });
      const starting = local.start();
      starting.catch(() => undefined);
      return { local, starting };
    };
    // Ranks start (or Redis is reached) while the coordinator loads the VAE; the timed decode
    // then includes each rank's own VAE load (once per rank) but not starting it.
    let group: RankGroup | null = null;
    let started: Promise<void> | undefined;
    if (redis !== undefined) {
      const q = queueGroup({ connection: redis, ...(queue !== undefined ? { queue } : {}), ...(args.has('ranks') ? { ranks } : {}), ...(queueTimeout !== undefined ? { timeoutMs: queueTimeout } : {}) });
      group = q;
      // Stopping is at once (the decode's keys go first), removing its jobs takes a round trip each.
      io.setSignalGrace?.(QUEUE_SIGNAL_GRACE_MS);
      // An unreachable Redis is reported before any weights are read.
      await q.connect().catch(async (e: unknown) => {
        await q.close();
        throw e;
      });
    } else if (planned !== null) {
      ({ local: group, starting: started } = startLocal(planned));
    }
    let vae: Vae | null = null;
    try {
      vae = await loadVae(source, loadOptions);
      const latent = configure(vae);
      if (redis === undefined && group === null) {
        const n = ranksFor(vae, latent);
        checkRankMemory(vae, n, ranks, loadOptions);
        ({ local: group, starting: started } = startLocal(n));
      }
      await started;
      throwIfAborted(io.signal);
      const grid = tileGrid(vae, latent);
      const rankStats = installStrategy(strategy, vae, group);
      const bar = progressBar(io, 'decode');
      const t0 = performance.now();
      const sample = await vae.decode(latents, { onProgress: bar.update, ...(io.signal ? { signal: io.signal } : {}) });
      const seconds = (performance.now() - t0) / 1000;
      bar.finish();
      throwIfAborted(io.signal);
      checkFiniteOutput(sample.data, 'the decode');
      const written =
        extname(out!).toLowerCase() === '.npy'
          ? (writeNpy(out!, sample), [out!])
          : video
            ? await writeSampleVideo(out!, sample, vae.family.sampleRange, fps !== undefined ? { fps } : {})
            : writeSamplePng(out!, sample, vae.family.sampleRange, { bitDepth: bitDepth === '16' ? 16 : 8 });
      const single = scheduleGrid(grid, 1);
      const shard = rankStats?.shard() ?? null;
      const notes = [...(redis === undefined && group!.size < ranks ? [`--ranks ${ranks} for ${grid.tiles.length} tile(s): ${group!.size} rank(s) started (a rank without a tile is never started)`] : []), ...(rankStats?.notes() ?? [])];
      const summary = {
        shape: sample.dims,
        tiles: shard ? 0 : grid.tiles.length * grid.chunks.length,
        seconds,
        ranks: rankStats?.ranks() ?? [{ rank: 0, tiles: single.ranks[0]!, load: single.loads[0]!, seconds }],
        strategy,
        ...(shard ? { bands: shard.bands.length, collectives: shard.collectives } : {}),
        ...(rankStats?.failures().length ? { failures: rankStats.failures() } : {}),
        ...(redis === undefined && args.has('ranks') ? { ranksRequested: ranks } : {}),
        ...(notes.length ? { note: notes.join('; ') } : {}),
        files: written,
      };
      if (args.flag('json')) {
        io.stdout(JSON.stringify(summary) + '\n');
      } else if (shard) {
        const bands = shard.bands.map((b) => `rank ${b.rank} latent rows [${b.start}, ${b.end})`).join(', ');
        io.stdout(`decoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s (row-sharded over ${group!.size} ${isolation} rank(s): ${bands}) -> ${written.join(', ')}\n`);
        io.stdout(`collectives (calls / bytes sent, all ranks): ${formatCollectives(shard.collectives)}\n`);
      } else {
        const where = redis !== undefined ? `queue "${queue ?? DEFAULT_QUEUE}"` : isolation;
        const over = group && group.size > 1 ? ` over ${group.size} ${where} ranks: ${summary.ranks.map((r) => `rank ${r.rank} ${r.tiles.length} tile(s)`).join(', ')}` : '';
        const exact = strategy === 'exact-tile' ? ' halo-exact' : '';
        io.stdout(`decoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s (${summary.tiles}${exact} tile(s)${over}) -> ${written.join(', ')}\n`);
        for (const f of rankStats?.failures() ?? []) io.stdout(`rank ${f.rank} was lost (${f.cause}); its tiles were decoded by the others\n`);
        for (const note of notes) io.stdout(`${note}\n`);
      }
      return 0;
    } finally {
      await group?.close();
      await vae?.dispose();
    }
  },
};
