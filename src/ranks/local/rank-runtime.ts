// The rank side of a local group, shared by threads and processes: a message loop that runs
// one program at a time (imported by module URL), routes peer messages into the run's
// communicator and coordinator messages to the program, cancels on request, and keeps the
// last loaded VAE across runs (keyed by content hash and load options).

import { DistVaeError } from '../../errors.js';
import type { Vae } from '../../decode/vae.js';
import type { Encoder } from '../../encode/encoder.js';
import type { ProgramRef, RankContext, RankProgram, VaeRef } from '../program.js';
import { RankCommunicator } from './communicator.js';
import { serializeError, transferables, type FromRank, type RankInit, type ToRank } from './protocol.js';

export interface RankEndpoint {
  init: RankInit;
  send(message: FromRank, transfer: ArrayBuffer[]): void;
  onMessage(handler: (message: ToRank) => void): void;
  /** Peak resident memory of this rank's process since the last reset (process isolation only). */
  peakRss?: { reset(): void; read(): number };
  /** Ends the rank after `close`. */
  exit(): void;
}

interface CurrentRun {
  run: number;
  comm: RankCommunicator;
  controller: AbortController;
  inbox: unknown[];
  handler: ((data: unknown) => void) | null;
}

export function serveRank(endpoint: RankEndpoint): void {
  const { init } = endpoint;
  let current: CurrentRun | null = null;
  let cached: { key: string; vae: Promise<Vae | Encoder> } | null = null;

  /** The half `ref` names (decoder, or encoder with `part`), the last one kept across runs. */
  const loadCached = (ref: VaeRef): Promise<Vae | Encoder> => {
    const options = { ...ref.loadOptions, threads: init.threads, ...(init.deviceId !== undefined ? { deviceId: init.deviceId } : {}) };
    const key = JSON.stringify([ref.hash, ref.part ?? 'decoder', options]);
    if (cached?.key === key) return cached.vae;
    const previous = cached?.vae;
    const vae = (async () => {
      await previous?.then(
        (v) => v.dispose(),
        () => undefined,
      );
      // Imported on first use: ranks that only run programs without a VAE start faster.
      const loaded =
        ref.part === 'encoder'
          ? await (await import('../../encode/encoder.js')).loadEncoder(ref.source, options)
          : await (await import('../../decode/vae.js')).loadVae(ref.source, options);
      const hash = loaded.contentHash();
      if (hash !== ref.hash) {
        await loaded.dispose();
        throw new DistVaeError(
          'WEIGHTS_MISMATCH',
          `rank ${init.rank} loaded a VAE with content hash ${hash.slice(0, 12)}… but the coordinator's has ${ref.hash.slice(0, 12)}…: this rank sees a different config or weights file`,
        );
      }
      return loaded;
    })();
    cached = { key, vae };
    vae.catch(() => {
      if (cached?.vae === vae) cached = null;
    });
    return vae;
  };

  const start = (message: Extract<ToRank, { type: 'start' }>): void => {
    const controller = new AbortController();
    const run = message.run;
    const comm = new RankCommunicator(
      init.rank,
      message.size,
      (to, tag, data) => endpoint.send({ type: 'peer', run, to, tag, data }, []),
      controller.signal,
    );
    const state: CurrentRun = { run, comm, controller, inbox: [], handler: null };
    current = state;
    const ctx: RankContext = {
      rank: init.rank,
      size: message.size,
      threads: init.threads,
      deviceId: init.deviceId,
      comm,
      signal: controller.signal,
      post: (data) => endpoint.send({ type: 'post', run, data }, transferables(data)),
      onMessage: (handler) => {
        state.handler = handler;
        for (const data of state.inbox.splice(0)) handler(data);
      },
      loadVae: (ref) => loadCached(ref) as Promise<Vae>,
      loadEncoder: (ref) => loadCached({ ...ref, part: 'encoder' }) as Promise<Encoder>,
    };
    endpoint.peakRss?.reset();
    const peak = () => (endpoint.peakRss ? { peakRssBytes: endpoint.peakRss.read() } : {});
    resolveProgram(message.program)
      .then((program) => program(ctx, message.input))
      .then(
        (result) => endpoint.send({ type: 'done', run, result, ...peak() }, []),
        (error: unknown) => endpoint.send({ type: 'failed', run, error: serializeError(error), ...peak() }, []),
      )
      .finally(() => {
        if (current === state) current = null;
      });
  };

  endpoint.onMessage((message) => {
    switch (message.type) {
      case 'start':
        start(message);
        return;
      case 'post':
        if (current?.run !== message.run) return;
        if (current.handler) current.handler(message.data);
        else current.inbox.push(message.data);
        return;
      case 'peer':
        if (current?.run === message.run) current.comm.deliver(message.from, message.tag, message.data);
        return;
      case 'cancel':
        if (current?.run === message.run) current.controller.abort(new Error(message.reason));
        return;
      case 'close': {
        current?.controller.abort(new Error('the group is closing'));
        const vae = cached?.vae;
        cached = null;
        void Promise.resolve(
          vae?.then(
            (v) => v.dispose(),
            () => undefined,
          ),
        ).finally(() => endpoint.exit());
        return;
      }
    }
  });
  endpoint.send({ type: 'ready' }, []);
}

const programs = new Map<string, Promise<RankProgram>>();

function resolveProgram(ref: ProgramRef): Promise<RankProgram> {
  const key = `${ref.module}#${ref.export}`;
  let program = programs.get(key);
  if (!program) {
    program = import(ref.module).then((module: Record<string, unknown>) => {
      const fn = module[ref.export];
      if (typeof fn !== 'function') {
        throw new DistVaeError(
          'INVALID_ARGUMENT',
          `program ${ref.export} is not a function exported by ${ref.module} (exports: ${Object.keys(module).join(', ') || 'none'})`,
        );
      }
      return fn as RankProgram;
    });
    programs.set(key, program);
    program.catch(() => programs.delete(key));
  }
  return program;
}
