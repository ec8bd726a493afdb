#!/usr/bin/env bash
# Checks the Debian package: validators and lintian, then installs it, runs the installed programs and removes it.
# Usage: scripts/check-package.sh [path/to/trainlab_VERSION_ARCH.deb]   (default: build/trainlab_*.deb)
# Installs and finally removes the trainlab package on this machine (as root, or through sudo).
# CHECK_PACKAGE_SKIP_GUI=1 skips the desktop-side checks; only for packages built with -DTRAINLAB_GUI=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
id=org.trainlab.TrainLab
fail() { echo "check-package: FAILED: $*" >&2; exit 1; }
step() { echo "== $*"; }

deb=${1:-$(ls -t "$root"/build/trainlab_*.deb 2>/dev/null | head -n1 || true)}
[ -n "$deb" ] && [ -f "$deb" ] || fail "no .deb given and none in build/ (run scripts/package.sh)"
deb=$(realpath "$deb")
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
bash "$root/scripts/install-deps.sh" --package
version=$(sed -n 's/^project(TrainLab VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
skip_gui=${CHECK_PACKAGE_SKIP_GUI:-0}

step "package $deb"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version) is not the project version $version"
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *libtorch* ]] || fail "Depends names no libtorch (dpkg-shlibdeps did not run?): $depends"
echo "Depends: $depends"
step "desktop-file-validate resources/$id.desktop"
desktop-file-validate "$root/resources/$id.desktop" || fail "desktop-file-validate $id.desktop"
step "appstreamcli validate resources/$id.metainfo.xml"
appstreamcli validate --no-net "$root/resources/$id.metainfo.xml" || fail "appstreamcli validate $id.metainfo.xml"
step "lintian (errors fail, warnings are printed)"
lintian --fail-on error "$deb" || fail "lintian reports errors (the E: lines above)"

tmp=$(mktemp -d)
installed=0
cleanup() {
  [ "$installed" = 1 ] && { $sudo apt-get remove -y -qq trainlab >/dev/null || echo "check-package: could not remove trainlab" >&2; }
  rm -rf "$tmp"
}
trap cleanup EXIT
step "apt-get install $deb"
installed=1
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --reinstall "$deb" >/dev/null \
  || fail "apt-get install $deb (its Depends could not be installed?)"

# From here on only the installed files are used, away from the source tree and the user's own runs and settings.
cd "$tmp"
export HOME="$tmp/home" TRAINLAB_RUNS_DIR="$tmp/runs"
unset TRAINLAB_RESOURCES XDG_DATA_HOME XDG_CONFIG_HOME
mkdir -p "$HOME"
step "trainlab-cli --version"
out=$(/usr/bin/trainlab-cli --version) || fail "trainlab-cli --version exited with $?"
echo "$out"
[[ $out == "trainlab-cli $version "* ]] || fail "trainlab-cli --version does not print $version"
step "trainlab-cli presets"
out=$(/usr/bin/trainlab-cli presets) || fail "trainlab-cli presets exited with $?"
grep -qx quick-demo <<<"$out" || fail "trainlab-cli presets does not list quick-demo: $out"
step "trainlab-cli run --preset quick-demo (1 epoch, 64/32 images)"
/usr/bin/trainlab-cli run --preset quick-demo --epochs 1 --train-limit 64 --test-limit 32 \
  || fail "trainlab-cli run --preset quick-demo exited with $?"
run=$(find "$TRAINLAB_RUNS_DIR" -mindepth 1 -maxdepth 1 -type d | head -n1)
[ -n "$run" ] || fail "the run left no folder in $TRAINLAB_RUNS_DIR"
[ -s "$run/config.json" ] || fail "no config.json in $run"
[ "$(wc -l < "$run/metrics.csv")" -eq 2 ] || fail "metrics.csv in $run is not a header and one epoch"
grep -Eq '"status": *"completed"' "$run/summary.json" || fail "summary.json in $run does not say completed"
step "man pages, copyright, changelog"
for f in /usr/share/man/man1/trainlab-cli.1.gz /usr/share/doc/trainlab/copyright /usr/share/doc/trainlab/changelog.gz; do
  [ -f "$f" ] || fail "$f not installed"
done
man -w trainlab-cli >/dev/null || fail "man -w trainlab-cli finds no page"

if [ "$skip_gui" = 1 ]; then
  echo "== desktop checks SKIPPED (CHECK_PACKAGE_SKIP_GUI=1)"
else
  [ -x /usr/bin/trainlab ] || fail "/usr/bin/trainlab is not in the package (built with -DTRAINLAB_GUI=OFF?)"
  step "trainlab --smoke-test (offscreen)"
  QT_QPA_PLATFORM=offscreen /usr/bin/trainlab --smoke-test || fail "trainlab --smoke-test exited with $?"
  step "desktop entry, metainfo, icons, man page"
  for f in "applications/$id.desktop" "metainfo/$id.metainfo.xml" "icons/hicolor/scalable/apps/$id.svg" man/man1/trainlab.1.gz; do
    [ -f "/usr/share/$f" ] || fail "/usr/share/$f not installed"
  done
  for n in 16 32 48 64 128 256; do
    [ -f "/usr/share/icons/hicolor/${n}x${n}/apps/$id.png" ] || fail "/usr/share/icons/hicolor/${n}x${n}/apps/$id.png not installed"
  done
  desktop-file-validate "/usr/share/applications/$id.desktop" || fail "desktop-file-validate on the installed entry"
  man -w trainlab >/dev/null || fail "man -w trainlab finds no page"
fi

step "apt-get remove trainlab"
$sudo apt-get remove -y -qq trainlab >/dev/null || fail "apt-get remove trainlab"
installed=0
[ ! -e /usr/bin/trainlab-cli ] || fail "/usr/bin/trainlab-cli is still there after removal"
echo "check-package: all checks passed for $(basename "$deb")"
