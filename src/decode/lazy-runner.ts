// A tile runner whose sessions are built on its first decode. A VAE loaded only to plan, to
// coordinate ranks that decode (each rank loads its own), or to feed a staged row-sharded decoder
// never decodes through the fused graph, so it should not hold that graph's session: for the SD
// decoder that is hundreds of MiB of weights copied into onnxruntime per process.

import type { Tensor } from '../tensor.js';
import type { TileRunner } from '../families/runtime-types.js';

export class LazyTileRunner implements TileRunner {
  private runner: Promise<TileRunner> | null = null;

  constructor(private readonly create: () => Promise<TileRunner>) {}

  /** Whether the sessions have been built (by a decode). */
  get built(): boolean {
    return this.runner !== null;
  }

  /** Builds the sessions now (the first decode would), so that decode timings leave them out. */
  async prepare(): Promise<void> {
    await this.session();
  }

  async decode(latentTile: Tensor, signal?: AbortSignal): Promise<Tensor> {
    return (await this.session()).decode(latentTile, signal);
  }

  private session(): Promise<TileRunner> {
    if (this.runner === null) {
      const creating = this.create();
      // A failed build is not cached: the next decode tries again and reports its own error.
      creating.catch(() => {
        if (this.runner === creating) this.runner = null;
      });
      this.runner = creating;
    }
    return this.runner;
  }

  async dispose(): Promise<void> {
    const runner = this.runner;
    this.runner = null;
    const built = await runner?.catch(() => null);
    await built?.dispose();
  }
}
