// Serves the built documentation site on 127.0.0.1 with the headers the demo needs: COOP/COEP
// (cross-origin isolation, so onnxruntime-web's WASM backend can use threads) and the right
// content types for .wasm / .mjs. WebGPU needs a secure context, which 127.0.0.1 is. Extra
// folders can be mounted (the trained TAEF2 weights at /models/taef2/ when they are present, so
// the demo's default weights resolve). Only GET and HEAD, single byte ranges (the page reads
// weights by HTTP Range); paths never leave their folder.
// Usage: npm run docs:serve [-- --port 8080]

import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSite, progressLine } from './build.js';

const DOCS_DIR = dirname(fileURLToPath(import.meta.url));
const TAEF2 = resolve(DOCS_DIR, '../../shared/models/taef2');

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.svg': 'image/svg+xml',
};

/** URL prefix (e.g. `/models/taef2/`) → folder on disk. */
export type Mounts = Readonly<Record<string, string>>;

function fileFor(root: string, mounts: Mounts, pathname: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  const mount = Object.keys(mounts).find((prefix) => decoded.startsWith(prefix));
  const base = resolve(mount ? mounts[mount]! : root);
  const rel = mount ? decoded.slice(mount.length) : decoded.slice(1);
  const path = resolve(base, rel === '' ? 'index.html' : rel);
  if (path !== base && !path.startsWith(base + sep)) return null;
  return existsSync(path) && statSync(path).isFile() ? path : null;
}

/** Starts a server for `root` on 127.0.0.1 (port 0: any free port); resolves with it and its base URL. */
export function serveSite(root: string, options: { port?: number; mounts?: Mounts } = {}): Promise<{ server: Server; url: string }> {
  const mounts = options.mounts ?? {};
  const server = createServer((req, res) => {
    const headers = {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cache-Control': 'no-store',
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...headers, Allow: 'GET, HEAD' }).end();
      return;
    }
    const file = fileFor(root, mounts, new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
    if (!file) {
      res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    const size = statSync(file).size;
    const type = { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream', 'Accept-Ranges': 'bytes' };
    // One `bytes=a-b` range (what random-access weight readers ask for); anything else gets the whole file.
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = range[2] === '' ? size - 1 : Math.min(Number(range[2]), size - 1);
      if (start > end || start >= size) {
        res.writeHead(416, { ...headers, 'Content-Range': `bytes */${size}` }).end();
        return;
      }
      res.writeHead(206, { ...headers, ...type, 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': end - start + 1 });
      if (req.method === 'HEAD') res.end();
      else createReadStream(file, { start, end }).pipe(res);
      return;
    }
    res.writeHead(200, { ...headers, ...type, 'Content-Length': size });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file).pipe(res);
  });
  return new Promise((resolveStart, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : options.port;
      resolveStart({ server, url: `http://127.0.0.1:${port}/` });
    });
  });
}

/** The folders the served site mounts by default: the trained TAEF2 pair when present. */
export function defaultMounts(): Mounts {
  return existsSync(TAEF2) ? { '/models/taef2/': TAEF2 } : {};
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const portIndex = process.argv.indexOf('--port');
  const port = portIndex >= 0 ? Number(process.argv[portIndex + 1]) : 8080;
  const outDir = join(DOCS_DIR, 'dist');
  console.log(`building the site into ${outDir} first (tens of seconds)`);
  buildSite({ outDir, onStep: progressLine() })
    .then(() => serveSite(outDir, { port, mounts: defaultMounts() }))
    .then(({ url }) =>
      console.log(
        `serving ${outDir} at ${url} (demo: ${url}demo.html${existsSync(TAEF2) ? '; TAEF2 weights at /models/taef2/' : '; no TAEF2 weights mounted: pick weights in the page'})`,
      ),
    )
    .catch((e: unknown) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    });
}
