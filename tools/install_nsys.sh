#!/usr/bin/env bash
# Nsight Systems (the `nsys` CLI and its QdstrmImporter) for the capture tests (tests/test_captures_nsys.py),
# unpacked from Debian's non-free packages nsight-systems-target and nsight-systems into
# $TRT_TRACE_CACHE_DIR/nsight-systems (default ~/.cache/trt_trace/nsight-systems), then kept there. Nothing
# of the system's apt set-up changes: the packages are fetched with apt-get through a private source
# list (the system's own Debian mirror, component non-free, release $TRT_TRACE_NSYS_RELEASE, default
# trixie) and unpacked with dpkg-deb, never installed. From the host package only QdstrmImporter and the
# libraries it links are kept (65 of 470 MB). Where libssh-4 (which it links) is missing it is installed
# with apt-get (Debian main). On a CPU machine nsys traces NVTX ranges and OS runtime calls, which is
# what the tests need; CUDA tracing needs a GPU.
#
# Prints the path of nsys. Used by tools/setup_env.sh; `TRT_TRACE_NSYS=/path/to/nsys` elsewhere.
set -euo pipefail
CACHE=${TRT_TRACE_CACHE_DIR:-$HOME/.cache/trt_trace}
DEST=$CACHE/nsight-systems
RELEASE=${TRT_TRACE_NSYS_RELEASE:-trixie}
if [ -x "$DEST/target-linux-x64/nsys" ] && [ -x "$DEST/host-linux-x64/QdstrmImporter" ]; then
  echo "$DEST/target-linux-x64/nsys"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
need_lib() { ldconfig -p | grep "$1" >/dev/null || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "$2" >&2; }
need_lib "libssh.so.4" libssh-4
need_lib "libpfm.so.4" libpfm4

# The Debian archive the system already uses (deb822 .sources or one-line sources.list).
mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | grep -v security \
    | sed -E 's/^deb (\[[^]]*\] )?//' | awk '{print $1}' | head -1 || true)
fi
if [ -z "$mirror" ]; then
  echo "install_nsys: no Debian archive in the system's apt sources; set TRT_TRACE_NSYS to an nsys" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $RELEASE non-free" > "$work/sources.list"
apt=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-" -o "Dir::State::Lists=$work/lists"
     -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
echo "install_nsys: fetching nsight-systems-target and nsight-systems ($RELEASE non-free, about 190 MB)" >&2
$SUDO apt-get "${apt[@]}" update -q >&2
(cd "$work/debs" && $SUDO apt-get "${apt[@]}" download nsight-systems-target nsight-systems >&2)
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/x"; done
target=$(find "$work/x" -type d -name target-linux-x64 -print -quit)  # not `| head -1`: under pipefail find's SIGPIPE fails set -e
host=$(find "$work/x" -type d -name host-linux-x64 -print -quit)
rm -rf "$DEST.partial"
mkdir -p "$DEST.partial/host-linux-x64"
cp -a "$target" "$DEST.partial/target-linux-x64"
cp "$host/QdstrmImporter" "$DEST.partial/host-linux-x64/"
# The importer's own libraries (copied as files: some are symlinks in the package).
LD_LIBRARY_PATH="$host" ldd "$host/QdstrmImporter" | awk -v h="$host" '$3 ~ "^"h {print $3}' \
  | while read -r lib; do cp -L "$lib" "$DEST.partial/host-linux-x64/"; done
ssh4=$(ldconfig -p | awk '/libssh\.so\.4 /{print $NF; exit}')
ln -sf "$ssh4" "$DEST.partial/host-linux-x64/libssh.so"  # Debian's importer links the unversioned name
missing=$(ldd "$DEST.partial/host-linux-x64/QdstrmImporter" | grep "not found" || true)
if [ -n "$missing" ]; then
  echo "install_nsys: QdstrmImporter still lacks: $missing" >&2
  exit 1
fi
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
"$DEST/target-linux-x64/nsys" --version >&2
echo "$DEST/target-linux-x64/nsys"
