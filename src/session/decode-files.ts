// decodeFiles: the library's decode session — latent files in, PNG / .npy / video files out, as a
// user asks for it: the VAE loaded once, the plan chosen within a memory budget (or installed as
// requested), ranks or a Redis queue started while the VAE loads, the fallback ladder when the
// policy chose, outputs streamed as they decode, and a report per file. Everything that can be
// refused (options, latents, plan, ranks, ffmpeg) is refused before the weights are read, when the
// architecture is known without them.

import { refuse, reason } from '../errors.js';
import type { Precision } from '../graph/precision.js';
import type { Tensor } from '../tensor.js';
import type { VaeSpec } from '../families/types.js';
import { sampleShapeOf, type LatentShape } from '../plan/shapes.js';
import { scheduleGrid } from '../plan/metrics.js';
import { tileGrid, type TileGrid } from '../plan/grid.js';
import { untilAborted } from '../decode/engine.js';
import { throwIfAborted } from '../errors.js';
import { checkLatents } from '../decode/latents.js';
import type { DecodeOptions } from '../decode/types.js';
import { loadVae, type Vae } from '../decode/vae.js';
import { checkAdapters } from '../runtime/devices.js';
import { predictDeviceMemory } from '../memory/device-memory.js';
import { readLatents } from '../io/latents.js';
import { latentScalingOf, unscaleLatents } from '../io/latent-scaling.js';
import { checkFfmpeg } from '../io/video.js';
import { vaeSpecOfSource } from '../sources/vae-source.js';
import { readLatentBatchNorm } from '../sources/latent-statistics.js';
import type { RankGroup } from '../ranks/group.js';
import { localGroup } from '../ranks/local/index.js';
import type { Isolation, LocalGroup } from '../ranks/local/local-group.js';
import { queueGroup } from '../ranks/queue/index.js';
import { DEFAULT_QUEUE } from '../ranks/queue/protocol.js';
import { splitBands, type Band } from '../strategies/shard/bands.js';
import { useStrategy, type Strategy, type StrategyReport } from '../strategies/index.js';
import { setTiling } from '../plan/planner.js';
import { formatBytes, peakRssBytes } from '../runtime/memory-budget.js';
import { ladderRungs, runLadder, type LadderAttempt } from '../memory/ladder.js';
import type { MemoryPlan } from '../memory/model.js';
import { describePlan } from '../memory/policy.js';
import { decide, exactRequest, installRequestedTiling, strategyOf, streamsBands, type Decision, type RankSetting } from './decision.js';
import { readDecodeRequest, type DecodeFilesOptions, type DecodeRequest, type OptionLabels } from './options.js';
import { checkRankMemory } from './rank-memory.js';
import { alternativeJson, choiceJson, memoryJson, type DecodeReport, type FileProgress } from './report.js';
import { decodeInto, writeWhole, type Written } from './writers.js';

/** How a caller follows and stops a decodeFiles call. */
export interface DecodeFilesHooks {
  /** Aborts the decode: it rejects with ABORTED, its ranks are ended and no output is left behind. */
  signal?: AbortSignal;
  /** Tiles decoded so far of the file being decoded. */
  onProgress?: (progress: FileProgress) => void;
  /** A line worth telling the user: an exact request over the default budget, a fallback attempt that ran out of memory. */
  onNotice?: (text: string) => void;
  /** Each file as soon as it is decoded and written (before the next one starts). */
  onFile?: (decoded: DecodedFile) => void;
  /** Names options in refusals as the caller spells them (default: the option's own name). */
  labels?: OptionLabels;
}

/** One decoded latent file: its report, and how the decode ran. */
export interface DecodedFile {
  /** The latent file decoded. */
  latents: string;
  report: DecodeReport;
  /** Where the decoder calls ran: local thread or process ranks, or the named Redis queue. */
  placement: { kind: Isolation | 'queue'; queue?: string; ranks: number };
  /** The plan decoded, in words (null without a memory model). */
  plan: string | null;
  /** Row sharding: each rank's band of latent rows. */
  bands: Band[] | null;
  /** The report's note, one sentence each. */
  notes: string[];
}

/**
 * Decodes latent files into image, sample or video files (see DecodeFilesOptions), loading the
 * VAE once; resolves with one DecodedFile per latent file, in order.
 *
 * @example
 * const [file] = await decodeFiles({ vae: { path: 'sdxl/vae' }, latents: 'z.npy', out: 'image.png', maxMemory: 4 * 2 ** 30 });
 * console.log(file.report.choice, file.report.files);
 */
export async function decodeFiles(options: DecodeFilesOptions, hooks: DecodeFilesHooks = {}): Promise<DecodedFile[]> {
  return new DecodeFilesRun(readDecodeRequest(options, hooks.labels), hooks).execute();
}

/** What decoding one latent file did before it is reported. */
interface Decoded extends Written {
  stats: StrategyReport | null;
  used: RankGroup | null;
  attempts: LadderAttempt[] | null;
}

/**
 * One call: checks the latents and the plan (before the weights when the architecture is known
 * without them), starts the ranks while the VAE loads, decodes each latent file and reports it.
 */
class DecodeFilesRun {
  private readonly noticed = new Set<string>();
  private decision: Decision | null = null;
  private batchNorm: Promise<{ mean: Float32Array; variance: Float32Array } | undefined> | undefined;
  private group: RankGroup | null = null;
  private started: Promise<void> | undefined;

  constructor(
    private readonly request: DecodeRequest,
    private readonly hooks: DecodeFilesHooks,
  ) {}

  async execute(): Promise<DecodedFile[]> {
    const { request } = this;
    const { options } = request;
    // WebGPU adapters are checked against this machine's before anything is read or started.
    if ((options.provider ?? 'cpu') === 'webgpu')
      await checkAdapters(options.devices ?? [options.deviceId], options.devices ? request.labels('devices') : request.labels('deviceId'));
    // Every latent file is read and checked before any weights, but only the first is kept: the
    // others are read again when their turn comes, so a long --out-dir run holds one latent at a
    // time, not all of them. A plan-only view checks each latent and the plan too, when the
    // architecture is known without the weights (a bare weights file names its variant only in its keys).
    const spec = vaeSpecOfSource(request.source);
    let held: Tensor | null = await this.readInput(0);
    for (let i = 1; i < request.inputs.length; i++) {
      const stored = await this.readInput(i);
      if (spec) this.configure(spec, await this.decoderLatents(spec, stored), request.inputs[i]!, request.outputs[i]!);
    }
    const planned = spec
      ? this.ranksFor(spec, this.configure(spec, await this.decoderLatents(spec, held), request.inputs[0]!, request.outputs[0]!))
      : null;
    if (planned !== null && options.redis === undefined && !this.laddered()) this.checkRanks(spec!, planned);
    if (request.video) checkFfmpeg();
    // Ranks start (or Redis is reached) while the coordinator loads the VAE; the timed decode
    // then includes each rank's own VAE load (once per rank) but not starting it.
    if (options.redis !== undefined) await this.connectQueue(options.redis);
    else if (planned !== null && !this.laddered()) this.startLocal(planned);
    let vae: Vae | null = null;
    try {
      vae = await loadVae(request.source, request.loadOptions);
      if (vae.precisionNote !== undefined) this.notice(`warning: ${vae.precisionNote}`);
      // A signal that came during the (synchronous) load is acted on now: no rank is started after it.
      throwIfAborted(this.hooks.signal);
      const first = this.configure(vae, await this.decoderLatents(vae, held), request.inputs[0]!, request.outputs[0]!);
      if (options.redis === undefined && this.group === null && !this.laddered()) {
        const n = this.ranksFor(vae, first);
        this.checkRanks(vae, n);
        this.startLocal(n);
      }
      // Ranks still starting when a signal comes are ended by the group's close.
      await untilAborted(this.started ?? Promise.resolve(), this.hooks.signal);
      const files: DecodedFile[] = [];
      for (let i = 0; i < request.inputs.length; i++) {
        // A file that changed since it was checked is checked again (decodeOne) before it is decoded.
        const stored = held ?? (await this.readInput(i));
        held = null;
        const file = await this.decodeOne(vae, stored, i);
        files.push(file);
        this.hooks.onFile?.(file);
      }
      return files;
    } finally {
      await this.group?.close();
      await vae?.dispose();
    }
  }

  /** Reads latent file `index` (its notes told once). */
  private readInput(index: number): Promise<Tensor> {
    return readLatents(this.request.inputs[index]!, { onNote: (text) => this.notice(text) });
  }

  /**
   * The latents `vae.decode` takes: a file's own, or with --latents-scaled the pipeline's scaling
   * undone (io/latent-scaling.ts; Flux.2's statistics read once from the checkpoint).
   */
  private async decoderLatents(vae: VaeSpec, stored: Tensor): Promise<Tensor> {
    if (!this.request.options.latentsScaled) return stored;
    const fields = vae.config.fields;
    this.batchNorm ??= typeof fields['batch_norm_eps'] === 'number' ? readLatentBatchNorm(this.request.source) : Promise.resolve(undefined);
    const batchNorm = await this.batchNorm;
    return unscaleLatents(stored, latentScalingOf(fields, vae.family.name, batchNorm ? { batchNorm } : {}));
  }

  /** Tells the caller a line once (the plan-only view and the loaded VAE both decide). */
  private notice(text: string): void {
    if (this.noticed.has(text)) return;
    this.noticed.add(text);
    this.hooks.onNotice?.(text);
  }

  private checkRanks(vae: VaeSpec, ranks: number): void {
    checkRankMemory(vae, ranks, this.request.ranks, this.request.loadOptions, undefined, this.request.labels('ranks'));
  }

  /** Checks a latent against the VAE and decides its plan (the policy's choice or the exact request). */
  private configure(vae: VaeSpec, stored: Tensor, latentsPath: string, out: string): LatentShape {
    const { request } = this;
    const { options, labels } = request;
    const latent = checkLatents(vae, stored, latentsPath);
    if (request.video && !vae.geometry.fiveDimLatents)
      refuse(
        'INVALID_ARGUMENT',
        reason(
          'INVALID_ARGUMENT',
          labels('out'),
          out,
          '.npy or .png for an image family',
          `${labels('out')} ${out}: ${vae.family.name} decodes images, not video; write .npy or .png`,
        ),
      );
    const sample = sampleShapeOf(vae.geometry, latent);
    const batch = stored.dims[0] ?? 1;
    if (request.auto) {
      this.decision = decide(vae, sample, request.budget, { ranks: request.ranks, batch, isolated: request.ladder, ...this.rankSetting() });
      return latent;
    }
    if (request.strategy === 'shard') splitBands(latent.height, request.ranks, vae.geometry.spatialRatio);
    else installRequestedTiling(vae, options);
    // Predicted for the ranks that will start (at most one per tile); a queue decode's workers are not this process's to predict.
    this.decision =
      options.redis !== undefined
        ? null
        : exactRequest(
            vae,
            sample,
            { budget: request.budget, explicit: request.budgetExplicit, labels, limits: request.limits },
            {
              strategy: request.strategy,
              ranks: this.ranksFor(vae, latent),
              batch,
              streamed: streamsBands(vae, request.outputs[0]!, batch),
              ...this.rankSetting(),
            },
            (text) => this.notice(text),
          );
    return latent;
  }

  /**
   * How this decode's ranks run, for the time model: local CPU ranks share this machine's cores,
   * as do GPU ranks on one adapter; GPU ranks dealt over distinct adapters (`devices`) and queue
   * workers are separate devices.
   */
  private rankSetting(): RankSetting {
    const { loadOptions, options } = this.request;
    const gpusApart = (loadOptions.provider ?? 'cpu') !== 'cpu' && new Set(options.devices ?? []).size > 1;
    return {
      ...(loadOptions.threads !== undefined ? { threads: loadOptions.threads } : {}),
      ...(loadOptions.provider !== undefined ? { provider: loadOptions.provider } : {}),
      devices: options.redis !== undefined || gpusApart ? 'separate' : 'shared',
    };
  }

  // The policy's choice decides the strategy and ranks of a decode without plan options; with a
  // ladder, every attempt starts its own process ranks.
  private chosenPlan(): MemoryPlan | null {
    return this.request.auto ? (this.decision?.choice?.plan ?? null) : null;
  }

  private strategyNow(): Strategy {
    const plan = this.chosenPlan();
    return plan ? strategyOf(plan) : this.request.strategy;
  }

  private laddered(): boolean {
    return this.request.ladder && this.chosenPlan() !== null;
  }

  /**
   * Ranks without work are never started (each would load the VAE): blended and halo-exact tiles
   * use at most one rank per tile of a chunk; row sharding refuses more ranks than latent rows.
   */
  private ranksFor(vae: VaeSpec, latent: LatentShape): number {
    const ranks = this.chosenPlan()?.ranks ?? this.request.ranks;
    return this.strategyNow() === 'shard' ? ranks : Math.min(ranks, tileGrid(vae, latent, { spatialOnly: true }).tiles.length);
  }

  /**
   * Local decodes always run their decoder calls on ranks (one thread without ranks asked for): a
   * call in onnxruntime blocks its thread, and the caller's thread must stay free to act on a signal.
   */
  private startLocal(ranks: number): void {
    throwIfAborted(this.hooks.signal);
    const local = this.localRanks(ranks, this.request.isolation, this.chosenPlan()?.threads);
    const started = local.start();
    started.catch(() => undefined);
    this.group = local;
    this.started = started;
  }

  /** The device rank `rank` runs on: `devices` round-robin, else `deviceId`, else the default 0. */
  private deviceOfRank(rank: number): number {
    const { devices, deviceId } = this.request.options;
    return devices ? devices[rank % devices.length]! : (deviceId ?? 0);
  }

  /** Local ranks with the plan's threads per rank (the whole decode for R ranks takes their threads), else the decode's own. */
  private localRanks(ranks: number, isolation: Isolation, planThreads?: number): LocalGroup {
    const threads = planThreads ?? this.request.loadOptions.threads;
    const listed = this.request.options.devices;
    // Rank r runs on devices[r % length]: fewer devices than ranks share them round-robin.
    const devices = listed ? Array.from({ length: ranks }, (_, r) => listed[r % listed.length]!) : undefined;
    return localGroup({ ranks, isolation, ...(threads !== undefined ? { threadsPerRank: threads } : {}), ...(devices ? { devices } : {}) });
  }

  /** Reaches Redis before any weights are read (an unreachable one is reported first). */
  private async connectQueue(connection: string): Promise<void> {
    const { queue, queueTimeoutMs, ranks } = this.request.options;
    const q = queueGroup({
      connection,
      ...(queue !== undefined ? { queue } : {}),
      ...(ranks !== undefined ? { ranks } : {}),
      ...(queueTimeoutMs !== undefined ? { timeoutMs: queueTimeoutMs } : {}),
    });
    this.group = q;
    await q.connect().catch(async (e: unknown) => {
      await q.close();
      throw e;
    });
  }

  /** Decodes one latent file into its output, as decided for it, and reports it. */
  private async decodeOne(vae: Vae, stored: Tensor, index: number): Promise<DecodedFile> {
    const { request, hooks } = this;
    const [latentsPath, out] = [request.inputs[index]!, request.outputs[index]!];
    const latents = await this.decoderLatents(vae, stored);
    const latent = this.configure(vae, latents, latentsPath, out);
    const grid = tileGrid(vae, latent);
    const t0 = performance.now();
    const onProgress = hooks.onProgress;
    const options: DecodeOptions = {
      ...(onProgress ? { onProgress: (e) => onProgress({ ...e, file: index }) } : {}),
      ...(hooks.signal ? { signal: hooks.signal } : {}),
    };
    const decoded = this.laddered()
      ? await this.decodeLaddered(vae, latents, out, options)
      : await this.decodeAsPlanned(vae, latents, out, options);
    const seconds = (performance.now() - t0) / 1000;
    return this.report(latentsPath, decoded, grid, seconds, vae.precision);
  }

  /** The policy's choice with its fallback ladder: each attempt on its own process ranks. */
  private async decodeLaddered(vae: Vae, latents: Tensor, out: string, options: DecodeOptions): Promise<Decoded> {
    const decision = this.decision!;
    const rungs = ladderRungs(decision.alternatives, decision.choice!);
    let stats: StrategyReport | null = null;
    let used: RankGroup | null = this.group;
    const outcome = await runLadder(
      rungs,
      async (rung) => {
        setTiling(vae, rung.tiling);
        const local = this.localRanks(Math.max(1, rung.plan.ranks), 'process', rung.plan.threads);
        try {
          await local.start();
          stats = useStrategy(vae, strategyOf(rung.plan), local, { offThread: true });
          used = local;
          return await vae.decode(latents, options);
        } finally {
          await local.close();
        }
      },
      (attempt, i) => {
        if (attempt.outcome === 'out-of-memory')
          this.hooks.onNotice?.(
            `attempt ${i + 1} (${describePlan(rungs[i]!.plan)}, predicted ${formatBytes(attempt.predictedPeakBytes)}) ran out of memory: ${attempt.error}${i + 1 < rungs.length ? `; trying ${describePlan(rungs[i + 1]!.plan)}` : ''}`,
          );
      },
    );
    const files = await writeWhole(vae, out, outcome.result, this.request, options.signal);
    const fellBack =
      outcome.attempts.length > 1
        ? `${outcome.rung.reason}: attempt ${outcome.attempts.length}, after the plans above it ran out of memory`
        : outcome.rung.reason;
    this.decision = {
      ...decision,
      plan: outcome.rung.plan,
      reason: fellBack,
      choice: outcome.rung,
      prediction: outcome.rung.prediction,
      time: outcome.rung.time,
      toneDrift: outcome.rung.class === 'blended' ? decision.toneDrift : null,
    };
    return { sample: outcome.result, files, stats, used, attempts: outcome.attempts.length > 1 ? outcome.attempts : null };
  }

  /** The decision's plan on the ranks already started. */
  private async decodeAsPlanned(vae: Vae, latents: Tensor, out: string, options: DecodeOptions): Promise<Decoded> {
    const stats = useStrategy(vae, this.strategyNow(), this.group, { offThread: true });
    const written = await decodeInto(vae, latents, out, this.request, options);
    return { ...written, stats, used: this.group, attempts: null };
  }

  /** What a decode did: the report, where it ran and the plan in words. */
  private report(latentsPath: string, decoded: Decoded, grid: TileGrid, seconds: number, precision: Precision): DecodedFile {
    const { request } = this;
    const { options } = request;
    const { sample, files, stats, used, attempts } = decoded;
    const final = this.decision;
    const single = scheduleGrid(grid, 1);
    const shard = stats?.shard() ?? null;
    const notes = [
      // A whole decode that took the ranks' threads says so in its reason, not as ranks left idle.
      ...(options.redis === undefined && used !== null && used.size < request.ranks && final?.plan?.threads === undefined
        ? [
            `${request.labels('ranks')} ${request.ranks} for ${grid.tiles.length} tile(s): ${used.size} rank(s) started (a rank without a tile is never started)`,
          ]
        : []),
      ...(stats?.notes() ?? []),
      ...(final?.toneDrift ? [final.toneDrift.message] : []),
    ];
    const ranks = stats?.ranks() ?? [{ rank: 0, tiles: single.ranks[0]!, load: single.loads[0]!, seconds }];
    const report: DecodeReport = {
      shape: sample.dims,
      tiles: shard ? 0 : grid.tiles.length * grid.chunks.length,
      seconds,
      ranks,
      strategy: this.strategyNow(),
      ...(options.redis === undefined ? { provider: request.loadOptions.provider ?? 'cpu', precision } : {}),
      ...(options.redis === undefined && (options.provider ?? 'cpu') !== 'cpu'
        ? { devices: ranks.map((r) => this.deviceOfRank(r.rank)) }
        : {}),
      ...(options.redis === undefined && (options.provider ?? 'cpu') !== 'cpu' && final?.prediction
        ? {
            deviceMemory: {
              limitBytes: request.budget.deviceBytes ?? null,
              ranks: predictDeviceMemory(final.prediction).ranks.map((r) => ({
                rank: r.rank,
                device: this.deviceOfRank(r.rank),
                predictedBytes: r.deviceBytes,
              })),
            },
          }
        : {}),
      ...(shard ? { bands: shard.bands.length, collectives: shard.collectives } : {}),
      ...(stats?.failures().length ? { failures: stats.failures() } : {}),
      ...(options.redis === undefined && options.ranks !== undefined ? { ranksRequested: request.ranks } : {}),
      ...(notes.length ? { note: notes.join('; ') } : {}),
      memory: memoryJson(request.budget, final?.prediction ?? null, {
        coordinator: peakRssBytes(),
        ranks: stats && used && used.transport !== 'queue' ? ranks : [],
      }),
      ...(final?.plan ? { choice: choiceJson(final.plan, final.reason, final.time?.seconds ?? null) } : {}),
      ...(final?.alternatives.length ? { alternatives: final.alternatives.map(alternativeJson) } : {}),
      ...(final?.toneDrift ? { toneDrift: final.toneDrift } : {}),
      ...(attempts ? { attempts } : {}),
      files,
    };
    const placement: DecodedFile['placement'] =
      options.redis !== undefined
        ? { kind: 'queue', queue: options.queue ?? DEFAULT_QUEUE, ranks: used?.size ?? 0 }
        : { kind: this.laddered() ? 'process' : request.isolation, ranks: used?.size ?? 1 };
    return {
      latents: latentsPath,
      report,
      placement,
      plan: final?.plan ? describePlan(final.plan) : null,
      bands: shard?.bands ?? null,
      notes,
    };
  }
}
