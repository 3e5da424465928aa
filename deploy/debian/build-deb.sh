#!/usr/bin/env bash
# Builds the Debian package grstats from the directory bundle of deploy/release/build-binary.sh
# and writes OUTDIR/grstats_VERSION_ARCH.deb; prints its path.
# Used by `make deb` and by the tests (tests/release/test_deb.py), so both build it alike.
#
# The package holds:
#   /usr/lib/grstats/                    the bundle: the executable grstats and _internal/
#                                        (Python, the modules, the libraries), loaded where they
#                                        lie: nothing is unpacked at run time
#   /usr/bin/grstats                     a link to /usr/lib/grstats/grstats
#   /lib/systemd/system/grstats-*        the units of deploy/systemd, running /usr/bin/grstats
#                                        (the unit directory of pkg-config systemd, if set)
#   /usr/lib/sysusers.d/grstats.conf     deploy/systemd/grstats.sysusers: the user grstats
#   /etc/grstats/agent.toml, collector.env   deploy/systemd's example configs (conffiles)
#   /var/lib/grstats                     the agent's state directory
#   /usr/share/doc/grstats/, /usr/share/man/man1/grstats.1.gz
# The units are made from deploy/systemd's at each build: one definition of each.
#
# Usage: deploy/debian/build-deb.sh BUNDLE OUTDIR [VERSION]
#   BUNDLE: the directory bundle (build-binary.sh's OUTDIR/grstats-VERSION-linux-ARCH.dir), or
#   the single file beside which it lies (OUTDIR/grstats-VERSION-linux-ARCH).
#   VERSION: the package's version (default: BUNDLE/grstats --version), e.g. a later one to try
#   an upgrade; a version with no entry in deploy/debian/changelog gets one made up.
#    or: deploy/debian/build-deb.sh --debian-version PYTHON_VERSION
#   prints the package version of a grstats version (the tests check that dpkg orders them so).
set -euo pipefail
# Python's pre-releases (0.2.0rc1, 0.2.0.dev3+g0d30b06) sort before their release in Debian
# with a ~ (0.2.0~rc1, 0.2.0~dev3+g0d30b06); the rest of a version is a Debian version as it is.
debian_version() {
  sed -E 's/^([0-9.]*[0-9])\.?(a|b|rc|dev)/\1~\2/' <<<"$1"
}
if [[ ${1:-} == --debian-version && $# == 2 ]]; then
  debian_version "$2"
  exit 0
fi
if (($# < 2 || $# > 3)); then
  echo "usage: $0 BUNDLE OUTDIR [VERSION]" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
systemd="$here/../systemd"
bundle="$1"
if [[ -f $bundle && -d $bundle.dir ]]; then
  bundle="$bundle.dir"
fi
if [[ ! -d $bundle || ! -x $bundle/grstats || ! -d $bundle/_internal ]]; then
  echo "$0: $1 is not a directory bundle of grstats (grstats and _internal/)" >&2
  exit 2
fi
bundle="$(realpath "$bundle")"
# The executable: the bundle's, which glibc file and --help name.
binary="$bundle/grstats"
out="$2"
version="${3:-$(debian_version "$("$binary" --version | awk '$1 == "grstats" { print $2 }')")}"
if [[ ! $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]]; then
  echo "$0: '$version' is not a version of a native Debian package" >&2
  exit 2
fi
arch="$(dpkg --print-architecture)"
# Where this system's systemd looks for packaged units.
unitdir="$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || true)"
unitdir="${unitdir:-/lib/systemd/system}"
maintainer="$(sed -n 's/^Maintainer: //p' "$here/control")"
# The oldest glibc the bundle runs with: build-binary.sh writes it beside the bundle
# (grstats-VERSION-linux-ARCH.glibc); without that file, this system's, which it was built on.
if [[ -f ${bundle%.dir}.glibc ]]; then
  glibc="$(cat "${bundle%.dir}.glibc")"
else
  glibc="$(getconf GNU_LIBC_VERSION | awk '{ print $2 }')"
fi
if [[ ! $glibc =~ ^[0-9]+(\.[0-9]+)+$ ]]; then
  echo "$0: '$glibc' is not a glibc version" >&2
  exit 2
fi
# The newest entry's date in deploy/debian/changelog, and the build's date (that one by default).
changelog_epoch="$(date -d "$(sed -n '0,/^ -- /s/^ -- .*>  //p' "$here/changelog")" +%s)"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$changelog_epoch}"

work="$(mktemp -d -t grstats-deb.XXXXXX)"
trap 'rm -rf "$work"' EXIT
stage="$work/grstats"
doc="$stage/usr/share/doc/grstats"
# /etc/grstats and /var/lib/grstats as policy has directories, 0755 root: postinst gives them
# their group or owner and mode 0750 (once the user exists), as the units expect them.
install -d -m 0755 "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib" "$stage$unitdir" \
  "$stage/usr/lib/sysusers.d" "$doc" "$stage/usr/share/man/man1" \
  "$stage/usr/share/lintian/overrides" "$stage/etc/grstats" "$stage/var/lib/grstats"

# The bundle as built, not stripped (PyInstaller's executable carries its archive of modules
# after the ELF sections), with the modes policy asks for: directories and the executable 0755,
# every other file 0644 (libraries are loaded, not run). The bootloader finds _internal/ beside
# the file it was started as, through the link: it resolves /usr/bin/grstats to its target.
cp -R --no-preserve=mode,ownership "$bundle" "$stage/usr/lib/grstats"
find "$stage/usr/lib/grstats" -type d -exec chmod 0755 {} +
find "$stage/usr/lib/grstats" -type f -exec chmod 0644 {} +
chmod 0755 "$stage/usr/lib/grstats/grstats"
# The libraries stripped of their symbol tables and comments, as dh_strip does (the dynamic
# symbols they link by stay); the executable is not, its archive would go.
find "$stage/usr/lib/grstats/_internal" -type f -print0 | LC_ALL=C sort -z |
  while IFS= read -r -d '' file; do
    if [[ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" == '177ELF' ]]; then
      strip --remove-section=.comment --remove-section=.note --strip-unneeded "$file"
    fi
  done
ln -s ../lib/grstats/grstats "$stage/usr/bin/grstats"

for unit in "$systemd"/*.service "$systemd"/*.timer; do
  target="$stage$unitdir/$(basename "$unit")"
  {
    echo "# Installed by the grstats Debian package: its ExecStart runs /usr/bin/grstats (the bundle"
    echo "# in /usr/lib/grstats, no virtual environment), and the notes below on /opt/grstats and"
    echo "# /etc/systemd/system do not apply. Change a setting with a drop-in, not here:"
    echo "#   systemctl edit $(basename "$unit")"
    sed -E 's#^(Exec[A-Za-z]*=)/opt/grstats/bin/grstats( |$)#\1/usr/bin/grstats\2#' "$unit"
  } >"$target"
  chmod 0644 "$target"
  if grep -v '^#' "$target" | grep -q /opt/grstats; then
    echo "$0: $(basename "$unit") still names /opt/grstats outside ExecStart" >&2
    exit 1
  fi
done
install -m 0644 "$systemd/grstats.sysusers" "$stage/usr/lib/sysusers.d/grstats.conf"
install -m 0644 "$systemd/agent.toml" "$systemd/collector.env" "$stage/etc/grstats/"

install -m 0644 "$here/copyright" "$doc/copyright"
{
  if [[ "$(sed -n '1s/^grstats (\([^)]*\)).*/\1/p' "$here/changelog")" != "$version" ]]; then
    echo "grstats ($version) unstable; urgency=medium"
    echo
    echo "  * Built from grstats $version."
    echo
    # Later than the entry below it, as Debian's policy (and lintian) asks of a newer entry.
    entry_epoch=$((SOURCE_DATE_EPOCH > changelog_epoch ? SOURCE_DATE_EPOCH : changelog_epoch + 1))
    echo " -- $maintainer  $(date -u -R -d "@$entry_epoch")"
    echo
  fi
  cat "$here/changelog"
} | gzip -9n >"$doc/changelog.gz"

# The manual page: grstats --help, as it stands in this executable.
{
  echo ".TH GRSTATS 1 \"$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)\" \"grstats $version\" \"User Commands\""
  echo ".SH NAME"
  echo "grstats \\- MySQL Group Replication stats agent, collector and client"
  echo ".SH SYNOPSIS"
  echo ".B grstats"
  echo ".I COMMAND"
  echo "[\\fIOPTIONS\\fR]"
  echo ".SH DESCRIPTION"
  echo ".nf"
  COLUMNS=80 "$binary" --help | sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
  echo ".fi"
  echo ".SH FILES"
  echo ".TP"
  echo ".I /etc/grstats/agent.toml"
  echo "the agent's config (grstats\\-agent.service)"
  echo ".TP"
  echo ".I /etc/grstats/collector.env"
  echo "the collector's flags (grstats\\-collector.service, grstats\\-spool\\-prune.service)"
  echo ".SH SEE ALSO"
  echo "\\fBgrstats\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR, \\fBsystemctl\\fR(1)"
} | gzip -9n >"$stage/usr/share/man/man1/grstats.1.gz"
chmod 0644 "$doc/changelog.gz" "$stage/usr/share/man/man1/grstats.1.gz"

# The lintian overrides, each after the comment that gives its reason (lintian shows it).
install -m 0644 "$here/lintian-overrides" "$stage/usr/share/lintian/overrides/grstats"

install -m 0644 "$here/conffiles" "$stage/DEBIAN/conffiles"
install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"
size="$(du -sk --apparent-size --exclude=DEBIAN "$stage" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" \
  -e "s/@GLIBC@/$glibc/" "$here/control" >"$stage/DEBIAN/control"

find "$stage" -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$out"
deb="$out/grstats_${version}_$arch.deb"
# gzip, not dpkg-deb's default xz: the bundle's archive of modules is compressed already, and
# xz takes a minute more.
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
echo "$deb"
