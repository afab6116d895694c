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
import { applyTilePlan, tileFramePlan, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { localGroup } from '../../ranks/local/index.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { tiledDecodeFor } from './tiled-decode.js';

interface Case {
  label: string;
  family: string;
  config: RawConfig;
  latent: number[];
  window: [number, number];
  overlap: [number, number];
  frames?: { window: number; overlap: number };
}

const CASES: Case[] = [
  {
    label: 'Wan 2.1, clipped edge tiles, 2 latent frames',
    family: 'wan',
    config: WAN21_TINY,
    latent: [1, 4, 2, 7, 9],
    window: [8, 8],
    overlap: [2, 2],
  },
  { label: 'Wan 2.2 (patch 2)', family: 'wan', config: WAN22_TINY, latent: [1, 8, 2, 4, 5], window: [24, 24], overlap: [8, 8] },
  {
    label: 'Qwen-Image, batch 2',
    family: 'qwen-image',
    config: QWEN_IMAGE_TINY,
    latent: [2, 16, 1, 6, 7],
    window: [8, 8],
    overlap: [2, 2],
  },
  {
    label: 'HunyuanVideo, temporal chunks with spatial tiles per chunk',
    family: 'hunyuan-video',
    config: HUNYUAN_VIDEO_TINY,
    latent: [1, 4, 5, 5, 6],
    window: [16, 16],
    overlap: [4, 4],
    frames: { window: 8, overlap: 4 },
  },
  {
    label: 'LTX-2, temporal tiling on',
    family: 'ltx2',
    config: LTX2_TINY,
    latent: [1, 4, 3, 5, 5],
    window: [64, 64],
    overlap: [16, 16],
    frames: { window: 8, overlap: 4 },
  },
];

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

function plan(vae: Vae, c: Case): void {
  applyTilePlan(vae, tileShapePlan(vae, c.window[0], c.window[1])!);
  applyTilePlan(vae, tileOverlapPlan(vae, c.overlap[0], c.overlap[1])!);
  if (c.frames) applyTilePlan(vae, tileFramePlan(vae, c.frames)!);
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
