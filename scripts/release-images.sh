#!/usr/bin/env bash
# The release's images: the same build as `npm run images` (local/images/), pushed by digest.
# Run by .github/workflows/release.yml on a tag; test/integration/container-images/release.test.ts
# runs it with --dry-run (everything but the push).
#
#   bash scripts/release-images.sh --repository REGISTRY/OWNER [--out DIR] [--dry-run]
#
# Writes
#   <out>/images/                      the OCI layout and one oci-archive per image
#   <out>/kustomization/kustomization.yaml
#                                      the release's kustomize Component: every image of the
#                                      manifests -> <repository>/<image>@<digest>
#   <out>/layouts/<image>/             each image alone as an OCI layout (what crane pushes)
#   <out>/pushed.txt                   <image> <reference@digest>, one a line (--dry-run: planned)
# The push (crane, pinned in the workflow, from the Go module proxy) sends the layout's own
# manifest and blobs, so the registry's digest is the built one; it is checked after each push.
set -euo pipefail

repository=''
out=release
dry_run=false
while [ $# -gt 0 ]; do
  case $1 in
    --repository) repository=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --dry-run) dry_run=true; shift ;;
    *) echo "[release-images] unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$repository" ] || { echo "[release-images] --repository REGISTRY/OWNER is required" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

node "$root/dist/local/images/main.js" --out "$out/images" --repository "$repository" \
  --component "$out/kustomization"

rm -rf "$out/layouts" && mkdir -p "$out/layouts"
: >"$out/pushed.txt"
# name, reference (repository/name:version), digest, archive: one line each.
node -e '
  const images = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  for (const i of Object.values(images)) console.log([i.name, i.reference, i.digest, i.archive].join(" "));
' "$out/images/images.json" | while read -r name reference digest archive; do
  layout=$out/layouts/$name
  mkdir -p "$layout"
  tar -xf "$archive" -C "$layout"
  pinned="${reference%:*}@$digest"
  if $dry_run; then
    echo "[release-images] would push $layout to $reference ($pinned)" >&2
  else
    crane push "$layout" "$reference" --image-refs "$layout.ref" >&2
    pushed=$(crane digest "$reference")
    [ "$pushed" = "$digest" ] || { echo "[release-images] $reference is $pushed, built $digest" >&2; exit 1; }
  fi
  echo "$name $pinned" >>"$out/pushed.txt"
done
echo "[release-images] $(wc -l <"$out/pushed.txt") images; Component: $out/kustomization/kustomization.yaml" >&2
