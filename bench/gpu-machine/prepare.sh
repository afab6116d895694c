#!/usr/bin/env bash
# Prepares what bench/gpu-machine/run.sh needs on a GPU machine that has only PyTorch (issue 26
# item 2), into the ignored folder bench/gpu-machine/.prepared/ (everything within 64 MiB):
#   distvae-linux-x64.tar.xz   the portable bundle (npm run bundle: node + package + runtime deps)
#   js/gpu.mjs, js/gpu-arms.mjs, js/synthetic-vae-folder.mjs
#                              bench/gpu.ts, bench/gpu-arms.ts and scripts/synthetic-vae-folder.ts
#                              compiled with esbuild (the repo's sources inlined, packages left to
#                              the bundle's node_modules), run by the bundle's node
#   diffusers-src.tar.xz       diffusers' src/diffusers exported unmodified from a git mirror
#                              (--diffusers-git DIR, default /work/.mirror/huggingface+diffusers),
#                              never committed; COMMIT names the revision
#   vulkan/*.deb               the Vulkan loader (libvulkan1, amd64) for a machine without one
#                              (apt-get download; skipped with --no-vulkan)
#
#   bash bench/gpu-machine/prepare.sh [--diffusers-git DIR] [--diffusers-rev REV] [--no-vulkan] [--bundle FILE]
# (--bundle: an already built distvae-linux-x64.tar.xz of this commit instead of building one)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
P="$HERE/.prepared"
DIFFUSERS_GIT=/work/.mirror/huggingface+diffusers
DIFFUSERS_REV=HEAD
VULKAN=1
BUNDLE=
while [ $# -gt 0 ]; do
  case "$1" in
    --diffusers-git) DIFFUSERS_GIT="$2"; shift 2 ;;
    --diffusers-rev) DIFFUSERS_REV="$2"; shift 2 ;;
    --no-vulkan) VULKAN=0; shift ;;
    --bundle) BUNDLE="$2"; shift 2 ;;
    *) echo "prepare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
rm -rf "$P"
mkdir -p "$P/js" "$P/vulkan"

if [ -n "$BUNDLE" ]; then
  cp "$BUNDLE" "$P/distvae-linux-x64.tar.xz"
else
  echo "[prepare] bundle"
  (cd "$ROOT" && node --import tsx scripts/bundle.ts --out "$P/distvae-linux-x64.tar.xz")
fi

echo "[prepare] compiling bench/gpu.ts, bench/gpu-arms.ts, scripts/synthetic-vae-folder.ts"
(cd "$ROOT" && node_modules/.bin/esbuild bench/gpu.ts bench/gpu-arms.ts scripts/synthetic-vae-folder.ts \
  --bundle --platform=node --format=esm --target=node20 --packages=external --log-level=warning \
  --outdir="$P/js" --out-extension:.js=.mjs)
# One folder: run.sh copies them beside the bundle's package, whose node_modules they import.
find "$P/js" -mindepth 2 -name '*.mjs' -exec mv {} "$P/js/" \;
find "$P/js" -mindepth 1 -type d -exec rm -rf {} +

echo "[prepare] diffusers from $DIFFUSERS_GIT ($DIFFUSERS_REV)"
GITDIR="$DIFFUSERS_GIT"
if [ ! -f "$GITDIR/HEAD" ] && [ -f "$GITDIR/repo/HEAD" ]; then GITDIR="$GITDIR/repo"; fi
COMMIT="$(git --git-dir="$GITDIR" rev-parse "$DIFFUSERS_REV^{commit}")"
git --git-dir="$GITDIR" archive --format=tar "$COMMIT" src/diffusers | xz -T0 -6 > "$P/diffusers-src.tar.xz"
git --git-dir="$GITDIR" log -1 --format='%H %cs %s' "$COMMIT" > "$P/DIFFUSERS_COMMIT"

if [ "$VULKAN" = 1 ]; then
  echo "[prepare] libvulkan1 (amd64)"
  lists=$(mktemp -d)
  o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
  mkdir -p "$lists/partial"
  apt-get $o update -qq >/dev/null
  (cd "$P/vulkan" && apt-get $o download libvulkan1 >/dev/null)
  rm -rf "$lists"
fi
git -C "$ROOT" rev-parse HEAD > "$P/COMMIT"
du -sh "$P"/* && du -sh "$P"
total=$(du -sb "$P" | cut -f1)
[ "$total" -le $((60 * 1024 * 1024)) ] || { echo "[prepare] $total bytes: over the 60 MiB this leaves room for" >&2; exit 1; }
echo "[prepare] done: carry bench/gpu-machine/.prepared and run: bash bench/gpu-machine/run.sh"
