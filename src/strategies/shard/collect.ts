// A synchronous full garbage collection, for the staged decoder, which lets activation buffers
// go at known points: V8 frees an unreachable ArrayBuffer's memory only when a collection runs,
// and it schedules collections by its JS heap, not by these buffers, so hundreds of MiB of dead
// buffers stayed resident through later stages (bench/shard.md). Node exposes `gc` only under
// `--expose-gc`; setting the flag at run time installs it in contexts created afterwards, so one
// new context lends it (per isolate: worker-thread ranks get their own).

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null = null;

/** Runs a full, synchronous V8 collection of this isolate (a few ms with the decoder's small JS heap). */
export function collectGarbage(): void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}
