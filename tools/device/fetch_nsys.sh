#!/usr/bin/env bash
# Packs an Nsight Systems for the GPU machine (which reaches no package index) into DIR (default .nsys,
# carried there beside .whl and .trt): DIR/nsys.tar.xz, about 40 MB, holding target-linux-x64 (the nsys
# CLI and its CUDA/NVTX injection with CUPTI 12.4, without the older CUPTIs and unused injections) and
# host-linux-x64 (QdstrmImporter, which turns a capture into a report, with the libraries it links,
# libssh and libpfm included), from the Debian non-free packages tools/install_nsys.sh unpacks.
# tools/device/nsys_probe.sh unpacks it into /tmp/nsys there and tries it.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.nsys}
nsys=$(bash tools/install_nsys.sh)
root=$(dirname "$(dirname "$nsys")")
mkdir -p "$dir"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -a "$root/host-linux-x64" "$stage/"
for lib in libssh.so.4 libpfm.so.4; do  # the importer's system libraries, which the GPU machine may lack
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
  cp -L "$path" "$stage/host-linux-x64/$lib"
done
ln -sf libssh.so.4 "$stage/host-linux-x64/libssh.so"
ln -s "$root/target-linux-x64" "$stage/target-linux-x64"
tar -C "$stage" -chJf "$dir/nsys.tar.xz" \
  --exclude='target-linux-x64/libcupti.so.1[01].*' --exclude='target-linux-x64/CollectX' \
  --exclude='target-linux-x64/libToolsInjectionCuDNN*' --exclude='target-linux-x64/libToolsInjectionCuBLAS*' \
  host-linux-x64 target-linux-x64
ls -l "$dir/nsys.tar.xz"
