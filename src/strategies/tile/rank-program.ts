// The rank side of a distributed tile decode. A rank decodes the tiles dealt to it in raster
// order; with 'edges' assembly it keeps each tile's raw edges, sends them to the ranks whose
// tiles read them (routes from the coordinator, also ones added later when tiles are
// re-dealt), and finalises a tile's crop as soon as the edges of its above, left and
// above-left neighbours are in — then only the crop goes to the coordinator. With 'raster'
// assembly it sends raw tiles. It ends when the coordinator says every tile is in. The coordinator
// hands it a few tiles at a time and says when edges are no longer read (`release`), so what it
// holds does not grow with the image.

import { asPlanes } from '../../decode/engine.js';
import { abortedError, DistVaeError } from '../../errors.js';
import type { TileRunner } from '../../families/runtime-types.js';
import type { Planes } from '../../tile/blend.js';
import { edgeSources, finalizeTile, tileEdges, type TileEdges } from '../../tile/assembler.js';
import type { RankContext } from '../../ranks/program.js';
import { EDGES_TAG, edgeReaders } from './messages.js';
import type { EdgeMessage, EdgeRoute, TileMessage, TileRankInput, TileRankReport, TileWork, ToTileRank } from './messages.js';

export async function tileRank(ctx: RankContext, input: TileRankInput): Promise<TileRankReport> {
  const { layout, assembly } = input;
  const started = performance.now();
  let lastActive = started;
  let vae: { runner: TileRunner } | null = null;
  let loadSeconds = 0;
  let decoderSeconds = 0;
  const queue: TileWork[] = [];
  const routes = new Map<number, EdgeRoute[]>();
  const own = new Map<number, TileEdges>();
  const received = new Map<number, { rows?: Planes; cols?: Planes }>();
  const waiting = new Map<number, { leading: number[]; planes: Planes }>();
  const delivered: number[] = [];
  let finished = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };

  const sendEdges = (route: EdgeRoute, edges: TileEdges) => {
    const message: EdgeMessage = {
      tile: route.tile,
      ...(route.rows ? { rows: edges.lastRows } : {}),
      ...(route.cols ? { cols: edges.lastCols } : {}),
    };
    ctx.comm.send(route.to, message, EDGES_TAG);
  };
  const addWork = (work: TileWork[], newRoutes: EdgeRoute[]) => {
    queue.push(...work);
    queue.sort((a, b) => a.index - b.index);
    for (const route of newRoutes) {
      const list = routes.get(route.tile) ?? [];
      list.push(route);
      routes.set(route.tile, list);
      const edges = own.get(route.tile);
      if (edges) sendEdges(route, edges);
    }
  };
  const deliver = (message: TileMessage) => {
    ctx.post(message);
    delivered.push(message.index);
    lastActive = performance.now();
  };
  /** Raw rows / cols of tile k from this rank's own decodes or a neighbour's message; null when k is no neighbour. */
  const edgeOf = (k: number | null, part: 'rows' | 'cols'): Planes | null | undefined => {
    if (k === null) return null;
    const mine = own.get(k);
    if (mine) return part === 'rows' ? mine.lastRows : mine.lastCols;
    return received.get(k)?.[part];
  };
  const finalizeReady = () => {
    for (const [index, tile] of waiting) {
      const src = edgeSources(layout, index);
      const above = edgeOf(src.above, 'rows');
      const left = edgeOf(src.left, 'cols');
      const corner = edgeOf(src.corner, 'rows');
      if (above === undefined || left === undefined || corner === undefined) continue;
      waiting.delete(index);
      const crop = finalizeTile(layout, index, tile.planes, {
        above: above && { lastRows: above },
        left: left && { lastCols: left },
        corner: corner && { lastRows: corner },
      });
      deliver({ kind: 'tile', index, leading: tile.leading, planes: crop });
    }
  };
  const decode = async (work: TileWork) => {
    if (!vae) {
      const t = performance.now();
      // An encoder's tiles run through the same program: only the half loaded differs.
      vae = input.vae.part === 'encoder' ? await ctx.loadEncoder(input.vae) : await ctx.loadVae(input.vae);
      loadSeconds = (performance.now() - t) / 1000;
    }
    const t = performance.now();
    const out = await vae.runner.decode(work.latent, ctx.signal);
    decoderSeconds += (performance.now() - t) / 1000;
    const planes = asPlanes(out);
    const ext = layout.extents[work.index]!;
    if (planes.height !== ext.height || planes.width !== ext.width || !Number.isInteger(planes.planes)) {
      throw new DistVaeError(
        'TENSOR_INVALID',
        `the decoder returned [${out.dims.join(', ')}] for tile ${work.index}; expected ${ext.height}x${ext.width} output units`,
      );
    }
    const leading = out.dims.slice(0, -2) as number[];
    if (assembly === 'raster') return deliver({ kind: 'tile', index: work.index, leading, planes });
    const edges = tileEdges(layout, planes, work.index);
    // A tile no blend reads (the last row and column) keeps no edges.
    if (edgeReaders(layout, work.index).length > 0) own.set(work.index, edges);
    for (const route of routes.get(work.index) ?? []) sendEdges(route, edges);
    if (!work.edgesOnly) waiting.set(work.index, { leading, planes });
    lastActive = performance.now();
  };

  ctx.onMessage((data) => {
    const message = data as ToTileRank;
    if (message.kind === 'work') addWork(message.work, message.routes);
    else if (message.kind === 'release')
      for (const t of message.tiles) {
        own.delete(t);
        received.delete(t);
        routes.delete(t);
      }
    else finished = true;
    notify();
  });
  ctx.comm.listen(EDGES_TAG, (_from, data) => {
    const message = data as EdgeMessage;
    const have = received.get(message.tile);
    received.set(message.tile, { rows: have?.rows ?? message.rows, cols: have?.cols ?? message.cols });
    notify();
  });
  ctx.signal.addEventListener('abort', notify);
  addWork(input.work, input.routes);

  while (!finished) {
    if (ctx.signal.aborted) throw abortedError(ctx.signal, 'tile decode');
    const next = queue.shift();
    if (next) await decode(next);
    finalizeReady();
    if (!next) await new Promise<void>((resolve) => (wake = resolve));
  }
  return { tiles: delivered, decoderSeconds, loadSeconds, busySeconds: (lastActive - started) / 1000, counters: ctx.comm.counters() };
}
