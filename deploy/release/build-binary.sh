#!/usr/bin/env bash
# Builds grstats frozen (no Python needed on the host) from a wheel of grstats: installs the
# wheel and PyInstaller (requirements.txt) in a virtual environment of its own, freezes
# grstats.spec, and writes, from one analysis:
#   OUTDIR/grstats-VERSION-linux-ARCH        the single-file executable, for hosts without
#                                            dpkg (it unpacks itself into $TMPDIR at each start)
#   OUTDIR/grstats-VERSION-linux-ARCH.dir/   the directory bundle (its executable grstats and
#                                            _internal/), which the Debian package installs:
#                                            nothing unpacked at run time
#   OUTDIR/grstats-VERSION-linux-ARCH.glibc  the oldest glibc both run with (the newest symbol
#                                            version any bundled library needs; the build
#                                            host's libpython decides it)
# They run on hosts whose glibc is at least that: build on the oldest distribution you run.
# Prints the single file's path. Used by `make dist` and by the tests (tests/release/
# conftest.py), so both build them alike.
# Usage: deploy/release/build-binary.sh WHEEL OUTDIR   (PYTHON: the Python to build with)
set -euo pipefail
if (($# != 2)); then
  echo "usage: $0 WHEEL OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
wheel="$(realpath "$1")"
out="$2"
python="${PYTHON:-python3}"
# PyInstaller's reproducible builds: a fixed hash seed (its analysis walks sets), and
# SOURCE_DATE_EPOCH, when set, for the dates it writes. deploy/release/release.sh sets both.
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
work="$(mktemp -d -t grstats-binary.XXXXXX)"
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
# --no-compile: PyInstaller compiles what it bundles itself; pip's .pyc files would go unused.
"$py" -m pip install --quiet --no-compile --disable-pip-version-check "$wheel" -r "$here/requirements.txt"
version="$(cd "$work" && "$py" -c 'import grstats; print(grstats.__version__)')"
# zlib level 6 for the archive of libraries too (PyInstaller's default there is 9): the
# executable is 0.4 % larger and its build 11 s shorter (docs/benchmarks.md, "Single-file executable").
(cd "$work" && PYINSTALLER_ZLIB_COMPRESSION_LEVEL=6 "$py" -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$work/dist" --workpath "$work/build" "$here/grstats.spec")
mkdir -p "$out"
target="$out/grstats-$version-linux-$(uname -m)"
rm -rf "$target.dir"
mv "$work/dist/grstats-onefile" "$target"
mv "$work/dist/grstats-onedir" "$target.dir"
mv "$work/dist/grstats.glibc" "$target.glibc"
echo "built $target: $(du -m "$target" | cut -f1) MB, and $target.dir: $(du -sm "$target.dir" | cut -f1) MB; they run with glibc >= $(cat "$target.glibc")" >&2
echo "$target"
