// Where a `--vae` name points, before anything is read: a weights file; a diffusers VAE folder;
// a diffusers pipeline folder (model_index.json → its `vae` component, or `subfolder`); or a
// Hub repo id `org/name[@revision]` found read-only in the local Hugging Face cache
// (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub; refs/<revision> →
// snapshots/<commit>/). Nothing is ever downloaded: a miss names every path searched.
//
// Variants follow diffusers: a VAE folder loaded with `variant` needs
// diffusion_pytorch_model.<variant>.safetensors (or .bin) — ModelMixin.from_pretrained raises
// when it is missing; a pipeline (or repo) whose VAE component lacks the variant falls back to
// the component's plain weights, as DiffusionPipeline.from_pretrained does
// (variant_compatible_siblings), and says so in `notes` — as it does when a pipeline resolves to
// its `vae` component. Callers show the notes (the CLI prints each to stderr).
//
// The cache is read as data, never trusted as paths: a ref must name one snapshot folder of its
// repo, and every file read from a snapshot (model_index.json, config.json, the weights) must
// resolve, after symlinks, into the repo's blobs/ (huggingface_hub's layout) or be a plain file
// of the snapshot itself (caches made without symlinks). Anything else is refused
// (FILE_INVALID, reason CACHE_PATH_ESCAPES) naming the path — nothing outside the cache loads.

import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import { DistVaeError, reason } from '../errors.js';

/** The weights file of a diffusers model folder. */
export const DIFFUSERS_WEIGHTS_FILE = 'diffusion_pytorch_model.safetensors';
const DIFFUSERS_PICKLE_FILE = 'diffusion_pytorch_model.bin';
const PIPELINE_INDEX = 'model_index.json';
const DEFAULT_COMPONENT = 'vae';

/** Where to look for a VAE: the pipeline component, the weights variant, the environment the cache location is read from. */
export interface LocateOptions {
  /** The pipeline component (or any subfolder) holding the VAE; default `vae` for a pipeline. */
  subfolder?: string;
  /** Weights variant, e.g. `fp16` or `bf16`. */
  variant?: string;
  /** Environment to read the cache location from (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** Where a VAE source resolved to: a single weights file, or a diffusers folder and its weights file (with notes on what was chosen). */
export type VaeLocation =
  /** A single weights file (its architecture comes from a family / config). */
  | { kind: 'file'; weightsPath: string; notes: string[] }
  /** A diffusers VAE folder: config.json plus the chosen weights file. */
  | { kind: 'folder'; folder: string; weightsPath: string; notes: string[] };

/** diffusers' `_add_variant`: the variant goes before the extension. */
export function withVariant(file: string, variant: string | undefined): string {
  if (variant === undefined) return file;
  const parts = file.split('.');
  return [...parts.slice(0, -1), variant, parts[parts.length - 1]].join('.');
}

/** Resolves what `name` denotes, without reading any weights. */
export function locateVae(name: string, options: LocateOptions = {}): VaeLocation {
  if (options.variant !== undefined && !/^[A-Za-z0-9_-]+$/.test(options.variant)) {
    const r = reason('VARIANT_INVALID', 'variant', options.variant, 'a variant name such as fp16 or bf16 (letters, digits, _ and -)');
    throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
  }
  if (existsSync(name)) {
    if (!statSync(name).isDirectory()) {
      if (options.subfolder !== undefined || options.variant !== undefined) {
        const r = reason(
          'SOURCE_OPTION',
          options.subfolder !== undefined ? 'subfolder' : 'variant',
          options.subfolder ?? options.variant,
          'a folder or repo id to apply to',
          `${name} is a weights file: --subfolder and --variant apply to folders and repo ids`,
        );
        throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
      }
      return { kind: 'file', weightsPath: name, notes: [] };
    }
    return locateInFolder(name, options, name);
  }
  const repo = parseRepoId(name);
  if (!repo) {
    const r = reason(
      'FILE_NOT_FOUND',
      'vae',
      name,
      'a diffusers folder, a weights file or a Hub repo id org/name[@revision]',
      `VAE not found: ${name}`,
    );
    throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
  }
  const snapshot = findSnapshot(repo, options.env ?? process.env);
  return locateInFolder(snapshot.folder, options, name, snapshot);
}

/** A snapshot of the Hub cache: its folder and the repo folder holding its blobs/. */
interface CacheSnapshot {
  folder: string;
  repoRoot: string;
}

/** Whether `path` is `folder` or lies under it (both already resolved). */
function isWithin(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function cacheEscape(path: string, valid: string, message: string): never {
  const r = reason('CACHE_PATH_ESCAPES', 'vae', path, valid, message);
  throw new DistVaeError('FILE_INVALID', r.message, { reasons: [r] });
}

/** Refuses a file of a cache snapshot that resolves outside the repo's blobs/ and outside the snapshot itself. */
function checkSnapshotFile(path: string, snapshot: CacheSnapshot): void {
  if (!existsSync(path)) return;
  const real = realpathSync(path);
  const blobs = join(realpathSync(snapshot.repoRoot), 'blobs');
  if (isWithin(blobs, real) || isWithin(realpathSync(snapshot.folder), real)) return;
  cacheEscape(
    path,
    `a file of the snapshot or a link into ${blobs}`,
    `${path} in the Hugging Face cache resolves to ${real}, outside its repo's blobs/ (${blobs}): refused, a cache file may link only into its repo's blobs/`,
  );
}

function locateInFolder(folder: string, options: LocateOptions, shown: string, snapshot?: CacheSnapshot): VaeLocation {
  if (snapshot) checkSnapshotFile(join(folder, PIPELINE_INDEX), snapshot);
  const isPipeline = existsSync(join(folder, PIPELINE_INDEX));
  let vaeFolder = folder;
  if (options.subfolder !== undefined) {
    const name = options.subfolder;
    if (name === '' || name === '.' || name === '..' || /[\\/]/.test(name)) {
      const r = reason('SUBFOLDER_INVALID', 'subfolder', name, 'the name of one folder inside the pipeline (no separators, not . or ..)');
      throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
    }
    vaeFolder = join(folder, name);
  } else if (isPipeline) {
    const components = pipelineComponents(join(folder, PIPELINE_INDEX));
    if (!components.includes(DEFAULT_COMPONENT)) {
      const r = reason(
        'NO_VAE_COMPONENT',
        'subfolder',
        undefined,
        `one of the pipeline's components: ${components.join(', ')}`,
        `${shown} is a pipeline without a "${DEFAULT_COMPONENT}" component (components: ${components.join(', ') || 'none'}); pick one with --subfolder`,
      );
      throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
    }
    vaeFolder = join(folder, DEFAULT_COMPONENT);
  }
  if (snapshot && existsSync(vaeFolder) && !isWithin(realpathSync(folder), realpathSync(vaeFolder)))
    cacheEscape(
      vaeFolder,
      `a folder inside the snapshot ${folder}`,
      `${vaeFolder} in the Hugging Face cache resolves to ${realpathSync(vaeFolder)}, outside its snapshot: refused`,
    );
  if (snapshot) checkSnapshotFile(join(vaeFolder, 'config.json'), snapshot);
  const notes: string[] = [];
  if (isPipeline && options.subfolder === undefined)
    notes.push(
      `${shown} is a diffusers pipeline: loading its ${DEFAULT_COMPONENT}/ component, as diffusers' pipelines do (--subfolder picks another)`,
    );
  if (!existsSync(join(vaeFolder, 'config.json'))) {
    const what = isPipeline
      ? `the pipeline ${shown} has no ${vaeFolder.slice(folder.length + 1)}/config.json`
      : `${vaeFolder} has no config.json (not a diffusers VAE folder or pipeline)`;
    const r = reason('CONFIG_NOT_FOUND', 'vae', vaeFolder, 'a folder with config.json', what);
    throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
  }
  const plain = [DIFFUSERS_WEIGHTS_FILE, DIFFUSERS_PICKLE_FILE];
  const wanted = plain.map((f) => withVariant(f, options.variant));
  let found = wanted.find((f) => existsSync(join(vaeFolder, f)));
  if (!found && options.variant !== undefined && isPipeline) {
    // DiffusionPipeline: a component without the variant loads its plain weights.
    found = plain.find((f) => existsSync(join(vaeFolder, f)));
    if (found)
      notes.push(
        `${vaeFolder} has no ${wanted[0]}; loading ${found} as diffusers' pipelines do for a component without the ${options.variant} variant`,
      );
  }
  if (!found) {
    if (
      existsSync(join(vaeFolder, `${withVariant(DIFFUSERS_WEIGHTS_FILE, options.variant)}.index.json`)) ||
      existsSync(join(vaeFolder, `${DIFFUSERS_WEIGHTS_FILE}.index.json`))
    ) {
      throw new DistVaeError(
        'UNSUPPORTED',
        `${vaeFolder} holds sharded weights (an .index.json); sharded VAE checkpoints are not supported`,
      );
    }
    const r = reason(
      'WEIGHTS_NOT_FOUND',
      'vae',
      vaeFolder,
      `one of ${wanted.join(', ')} inside the folder`,
      `${vaeFolder} has none of ${wanted.join(', ')}`,
    );
    throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
  }
  if (snapshot) checkSnapshotFile(join(vaeFolder, found), snapshot);
  return { kind: 'folder', folder: vaeFolder, weightsPath: join(vaeFolder, found), notes };
}

function pipelineComponents(indexPath: string): string[] {
  let index: unknown;
  try {
    index = JSON.parse(readFileSync(indexPath, 'utf8'));
  } catch (e) {
    throw new DistVaeError('FILE_INVALID', `${indexPath} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
  if (typeof index !== 'object' || index === null || Array.isArray(index))
    throw new DistVaeError('FILE_INVALID', `${indexPath} must hold a JSON object`);
  // Components are the entries of the form [library, class]; `_class_name` etc. are not.
  return Object.entries(index)
    .filter(([k, v]) => !k.startsWith('_') && Array.isArray(v) && v.length === 2 && v[0] !== null)
    .map(([k]) => k);
}

interface RepoId {
  org: string;
  name: string;
  revision: string;
}

/** `org/name` or `org/name@revision` (Hub names: letters, digits, `-`, `_`, `.`). */
export function parseRepoId(text: string): RepoId | null {
  const m = /^([A-Za-z0-9][A-Za-z0-9_.-]*)\/([A-Za-z0-9][A-Za-z0-9_.-]*)(?:@([A-Za-z0-9_./-]+))?$/.exec(text);
  if (!m || m[3]?.split('/').includes('..')) return null;
  return { org: m[1]!, name: m[2]!, revision: m[3] ?? 'main' };
}

/** The cache folders searched, in huggingface_hub's order of precedence (the first set wins). */
export function hubCacheDirs(env: Readonly<Record<string, string | undefined>>): string[] {
  if (env['HF_HUB_CACHE']) return [env['HF_HUB_CACHE']];
  if (env['HF_HOME']) return [join(env['HF_HOME'], 'hub')];
  return [join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'huggingface', 'hub')];
}

/**
 * The snapshot folder of a repo revision in the local cache, or FILE_NOT_FOUND naming every path
 * tried. A ref must name one snapshot folder of the repo (a single path segment that exists under
 * snapshots/ and resolves there): `../..`, an absolute path or a link out is FILE_INVALID.
 */
function findSnapshot(repo: RepoId, env: Readonly<Record<string, string | undefined>>): CacheSnapshot {
  const searched: string[] = [];
  for (const cache of hubCacheDirs(env)) {
    const root = join(cache, `models--${repo.org}--${repo.name}`);
    const ref = join(root, 'refs', repo.revision);
    searched.push(ref);
    if (existsSync(root) && !isWithin(realpathSync(cache), realpathSync(root)))
      cacheEscape(
        root,
        `a folder inside the cache ${cache}`,
        `the repo folder ${root} resolves to ${realpathSync(root)}, outside the Hugging Face cache ${cache}: refused`,
      );
    let commit: string | undefined;
    if (existsSync(ref) && statSync(ref).isFile()) {
      if (!isWithin(realpathSync(join(root, 'refs')), realpathSync(ref)))
        cacheEscape(
          ref,
          `a file inside ${join(root, 'refs')}`,
          `the ref ${ref} resolves to ${realpathSync(ref)}, outside the cache: refused`,
        );
      commit = readFileSync(ref, 'utf8').trim();
      if (commit === '' || commit === '.' || commit === '..' || /[\\/]/.test(commit) || isAbsolute(commit))
        cacheEscape(
          ref,
          `the name of one folder of ${join(root, 'snapshots')} (a commit hash)`,
          `the ref ${ref} holds ${JSON.stringify(commit)}, not the name of a snapshot folder of ${join(root, 'snapshots')}: refused, a ref may name only a snapshot of its repo`,
        );
    } else if (/^[0-9a-f]{40}$/.test(repo.revision)) commit = repo.revision;
    if (commit !== undefined) {
      const snapshot = join(root, 'snapshots', commit);
      searched.push(snapshot);
      if (existsSync(snapshot) && statSync(snapshot).isDirectory()) {
        if (!isWithin(realpathSync(join(root, 'snapshots')), realpathSync(snapshot)))
          cacheEscape(
            snapshot,
            `a folder inside ${join(root, 'snapshots')}`,
            `the snapshot ${snapshot} resolves to ${realpathSync(snapshot)}, outside its repo's snapshots/: refused`,
          );
        return { folder: snapshot, repoRoot: root };
      }
      if (existsSync(ref)) {
        const r = reason(
          'NOT_IN_CACHE',
          'vae',
          snapshot,
          `a snapshot folder under ${join(root, 'snapshots')}`,
          `the ref ${ref} names the snapshot ${commit}, but ${snapshot} is not a folder of the cache (an interrupted download?); nothing is downloaded: fetch it again (e.g. huggingface-cli download ${repo.org}/${repo.name})`,
        );
        throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
      }
    }
  }
  const id = `${repo.org}/${repo.name}@${repo.revision}`;
  const r = reason(
    'NOT_IN_CACHE',
    'vae',
    id,
    'a local path, or a repo already in the local Hugging Face cache',
    `${id} is not a local path and not in the local Hugging Face cache (searched ${searched.join(', ')}); nothing is downloaded: fetch it first (e.g. huggingface-cli download ${repo.org}/${repo.name})`,
  );
  throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
}
