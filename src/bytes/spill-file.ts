// A scratch file for float32 weights that exist only in memory (converted from float16 /
// bfloat16 / .pth storages, or generated): appended one tensor at a time, so onnxruntime reads
// them as external data (runtime/session.ts) and no JS copy of a whole decoder is ever held.
// The file must stay while sessions may still be built from it (a tile runner rebuilds its
// session for another attention chunking), so it is removed by close() or at process exit.
// (Unlinking it at once and naming it through /proc/self/fd does not work: onnxruntime
// canonicalises external paths and refuses a deleted file's.) Node only.

import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FileBytes } from './file-bytes.js';

/** An append-only scratch file of float32 tensors, each named by the FileBytes it returns. */
export class SpillFile {
  private readonly fd: number;
  private readonly dir: string;
  /** The file's absolute path. */
  readonly path: string;
  private size = 0;
  private closed = false;
  private readonly onExit = () => this.close();

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'distvae-weights-'));
    this.path = join(this.dir, 'weights.bin');
    this.fd = openSync(this.path, 'w');
    process.once('exit', this.onExit);
  }

  /** Appends a tensor's bytes (little-endian float32) and returns where they lie. */
  append(data: Float32Array): FileBytes {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const offset = this.size;
    for (let at = 0; at < bytes.length;) at += writeSync(this.fd, bytes, at, bytes.length - at, offset + at);
    this.size += bytes.length;
    return { path: this.path, offset, length: bytes.length };
  }

  /** Bytes written so far. */
  get bytes(): number {
    return this.size;
  }

  /** Removes the file: sessions can no longer be built from its tensors. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    process.removeListener('exit', this.onExit);
    closeSync(this.fd);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
