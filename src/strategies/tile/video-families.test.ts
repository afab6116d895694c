// Whole-tile distribution of the video families: for Wan 2.1 / 2.2, Qwen-Image, HunyuanVideo and
// LTX-2 (tiny configs, synthetic weights) the distributed tiled decode over 1–3 local ranks is
// bitwise identical to the single-rank tiled decode of the same plan. Each tile carries all its
// frames; HunyuanVideo and LTX-2 run the spatial tiling once per temporal chunk, so dispatch,
// exchange and assembly repeat per chunk.

import { after, test } from 'node:test';
import { loadVae, type Vae } from '../../decode/vae.js';
import { HUNYUAN_VIDEO_TINY, LTX2_TINY, QWEN_IMAGE_TINY, WAN21_TINY, WAN22_TINY } from '../../families/testing/video-configs.js';
import type { RawConfig } from '../../families/types.js';
import { seededTensor } from '../../tensor.js';
import { tileFramePlan, tileOverlapPlan, tileShapePlan, setTiling } from '../../plan/planner.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { localGroup } from '../../ranks/local/index.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { tiledDecodeFor } from './tiled-decode.js';

/** Every case here tiles with a square window and overlap (output px); frames in latent frames. */
interface Case {
  label: string;
  family: string;
  config: RawConfig;
  latent: number[];
  window: number;
  overlap: number;
  frames?: { window: number; overlap: number };
}

/** A case; a frame plan is [window, overlap] where given. */
function square(
  label: string,
  family: string,
  config: RawConfig,
  latent: number[],
  window: number,
  overlap: number,
  frames?: [number, number],
): Case {
  return { label, family, config, latent, window, overlap, ...(frames ? { frames: { window: frames[0], overlap: frames[1] } } : {}) };
}

const CASES: Case[] = [
  square('Wan 2.1, clipped edge tiles, 2 latent frames', 'wan', WAN21_TINY, [1, 4, 2, 7, 9], 8, 2),
  square('Wan 2.2 (patch 2)', 'wan', WAN22_TINY, [1, 8, 2, 4, 5], 24, 8),
  square('Qwen-Image, batch 2', 'qwen-image', QWEN_IMAGE_TINY, [2, 16, 1, 6, 7], 8, 2),
  square('HunyuanVideo, temporal chunks with spatial tiles per chunk', 'hunyuan-video', HUNYUAN_VIDEO_TINY, [1, 4, 5, 5, 6], 16, 4, [8, 4]),
  square('LTX-2, temporal tiling on', 'ltx2', LTX2_TINY, [1, 4, 3, 5, 5], 64, 16, [8, 4]),
];

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

function plan(vae: Vae, c: Case): void {
  setTiling(vae, tileShapePlan(vae, c.window, c.window)!);
  setTiling(vae, tileOverlapPlan(vae, c.overlap, c.overlap)!);
  if (c.frames) setTiling(vae, tileFramePlan(vae, c.frames)!);
}

for (const c of CASES) {
  test(`distributed tiles are bitwise the single-rank tiled decode: ${c.label}`, async () => {
    const vae = await loadVae({ family: c.family, config: c.config, weights: 'synthetic', seed: 5 }, { threads: 1 });
    try {
      plan(vae, c);
      const z = seededTensor(c.latent, 21);
      const expected = await vae.decode(z);
      const single = vae.tiledDecode;
      for (const ranks of [2, 3]) {
        vae.tiledDecode = tiledDecodeFor(vae, groups.get(ranks))!;
        assertSameBits(await vae.decode(z), expected, `${c.label}, ${ranks} ranks`);
        vae.tiledDecode = single;
      }
    } finally {
      await vae.dispose();
    }
  });
}
