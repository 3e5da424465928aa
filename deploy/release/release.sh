#!/usr/bin/env bash
# `make release`: every release file of this commit, built so that two builds of one commit are
# the same bytes, and their checksums. Writes into OUTDIR (default dist/):
#   grstats-VERSION.tar.gz, grstats-VERSION-py3-none-any.whl   the sdist and the wheel
#   grstats-VERSION-linux-ARCH (and .dir/, .glibc)             the single file and the bundle
#   grstats_DEBVERSION_DEBARCH.deb                             the Debian package of the bundle
#   SHA256SUMS                                                 sha256sum's lines for the four
# VERSION is git's (_version.py): a tag v0.2.0 gives 0.2.0, any other commit a version naming it.
# Every date in them is the commit's (SOURCE_DATE_EPOCH), archives are sorted, and the hash seed
# is fixed. The tree must be the commit: uncommitted changes and untracked files would be built
# under the commit's version, so they stop the build (ALLOW_MODIFIED=1 builds them anyway, with
# a warning). Builds on one machine kind give the same bytes: the frozen files hold this
# machine's Python and libraries.
# Usage: deploy/release/release.sh [OUTDIR]   (PYTHON: the Python to build with)
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-dist}"
python="${PYTHON:-python3}"

if [[ -n "$(git status --porcelain --untracked-files=normal)" ]]; then
  if [[ ${ALLOW_MODIFIED:-} != 1 ]]; then
    echo "$0: the tree differs from its commit (git status): commit or remove the changes, or set ALLOW_MODIFIED=1" >&2
    exit 1
  fi
  echo "$0: warning: building a modified tree under its commit's version" >&2
fi
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
export SOURCE_DATE_EPOCH PYTHONHASHSEED=0 TZ=UTC LC_ALL=C
umask 022

rm -rf "$out"
env -u PYTHONDONTWRITEBYTECODE "$python" -m build --outdir "$out" .
binary="$(PYTHON="$python" bash deploy/release/build-binary.sh "$out"/grstats-*.whl "$out")"
deb="$(bash deploy/debian/build-deb.sh "$binary.dir" "$out")"
(
  cd "$out"
  sha256sum -- grstats-*.tar.gz grstats-*.whl "$(basename "$binary")" "$(basename "$deb")" >SHA256SUMS
)
cat "$out/SHA256SUMS"
