#!/usr/bin/env bash
# scripts/pocl_pack.sh: pack this machine's PoCL (Debian 12's pocl 3.1, the
# CPU OpenCL driver) for the lent GPU machine's host, which can install
# nothing and has no OpenCL ICD loader system-wide (a libpocl.so.2 was found
# there once, not Debian's: pocl_install.sh replaces it with POCL_FORCE=1,
# as the run below did), so that xylem's
# OpenCL backend can be measured there on the host CPU (scripts/gpu.sh
# host_ops2 with HOST_OPS2_BACKENDS="native opencl").
#
#   scripts/pocl_pack.sh   here: copies into .pocl/ (ignored through
#                          .git/info/exclude, like .gpu/)
#                            lib/x86_64-linux-gnu/libpocl.so.2*   the driver
#                            lib/x86_64-linux-gnu/pocl/*.so       its device modules
#                            share/pocl/                          headers and kernel-*.bc
#                            deps/                                every shared library
#                                libpocl and its modules load beyond the C/C++
#                                runtime and zlib (LLVM 15, libclang-cpp 15, z3,
#                                hwloc, libedit, libffi, ...; z3 and libxml2
#                                as stubs, see below), stripped
#                            pocl.icd                             the ICD file
#                          then tar | xz --x86 -9e into .pocl.tar.xz (~35 MB:
#                          carry it beside .gpu.tar.xz, ~28 MB; the device
#                          tool takes 64 MiB in all).
#   scripts/pocl_install.sh   there, puts it in place (see that script).
#
# The tree under .pocl/ is itself a relocatable PoCL install (PoCL 3.1 is
# built with ENABLE_RELOCATION: it finds pocl/ and ../../share/pocl next to
# the libpocl.so.2 it was loaded from), so it can be tried here with
# LD_LIBRARY_PATH=.pocl/lib/x86_64-linux-gnu:.pocl/deps and
# OCL_ICD_VENDORS=.pocl/pocl.icd.
#
# Environment: POCL_PACK_KERNELS, the kernel library variants to keep (default
# "avx512 avx2"). Debian ships nine (GENERIC sse2 ssse3 sse41 avx avx_f16c
# avx_fma4 avx2 avx512, ~9 MB each, ~0.8 MB each compressed beside the
# first); PoCL 3.1 picks one at run time from the host CPU's features
# (getX86KernelLibName in lib/CL/pocl_llvm_build.cc: the last match of sse2,
# ssse3, sse41, avx, avx_f16c, avx_fma4, avx2, then avx512 for any CPU with
# avx512f, so every AVX-512 Xeon takes avx512); avx2 covers a host without
# AVX-512. All nine make the pack ~41 MB, over the 34 MiB there is room for.
# POCL_PACK_STUBS: see below. POCL_PACK_XZ=0: fill .pocl/ only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pack=$root/.pocl
libdir=/usr/lib/x86_64-linux-gnu
share=/usr/share/pocl
kernels=${POCL_PACK_KERNELS:-avx512 avx2}
stubs=${POCL_PACK_STUBS-libz3.so.4 libxml2.so.2}
limit=$((34 * 1024 * 1024))

[ -e "$libdir/libpocl.so.2" ] || { echo "no $libdir/libpocl.so.2: apt-get install libpocl2 pocl-opencl-icd" >&2; exit 2; }

# The repository's exclude file (a worktree's .git is a file that points to it).
exclude=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir)/info/exclude
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.pocl/' "$exclude" 2>/dev/null || echo '/.pocl/' >>"$exclude"
grep -qxF '/.pocl.tar.xz' "$exclude" || echo '/.pocl.tar.xz' >>"$exclude"

rm -rf "$pack"
mkdir -p "$pack/lib/x86_64-linux-gnu/pocl" "$pack/share/pocl" "$pack/deps"

# The driver (real file and its soname link) and its device modules.
real=$(readlink -f "$libdir/libpocl.so.2")
cp "$real" "$pack/lib/x86_64-linux-gnu/"
ln -s "$(basename "$real")" "$pack/lib/x86_64-linux-gnu/libpocl.so.2"
cp "$libdir"/pocl/*.so "$pack/lib/x86_64-linux-gnu/pocl/"

# Headers and the kernel libraries asked for.
cp -r "$share/include" "$pack/share/pocl/"
for k in $kernels; do
  f=$share/kernel-x86_64-pc-linux-gnu-$k.bc
  [ -f "$f" ] || { echo "no $f" >&2; exit 2; }
  cp "$f" "$pack/share/pocl/"
done

# Shared libraries libpocl and its modules load (the NEEDED closure), except
# the C/C++ runtime and zlib (Ubuntu 24.04 has newer ones of each; .gpu/deps
# carries zlib too), and except what only a stubbed library needs.
core='^(libc|libm|libmvec|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*|libz|libpocl[^/]*)\.so'
declare -A where=() seen=()
while read -r name path; do where[$name]=$path; done < <(
  for f in "$libdir/libpocl.so.2" "$libdir"/pocl/*.so; do ldd "$f"; done | awk '/=> \//{print $1, $3}' | sort -u)
queue=("$libdir/libpocl.so.2" "$libdir"/pocl/*.so)
while [ ${#queue[@]} -gt 0 ]; do
  f=${queue[0]}
  queue=("${queue[@]:1}")
  for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -z "${seen[$n]:-}" ] || continue
    seen[$n]=1
    grep -qE "$core" <<<"$n" && continue
    [ -n "${where[$n]:-}" ] || { echo "cannot resolve $n (needed by $f)" >&2; exit 2; }
    cp -L "${where[$n]}" "$pack/deps/$n"
    # A stub's own dependencies are not needed.
    grep -qwF "$n" <<<"$stubs" || queue+=("${where[$n]}")
  done
done

# Stubs: each library in POCL_PACK_STUBS (default libz3.so.4 and libxml2.so.2,
# with libxml2's ICU 72 and liblzma) is replaced by a small library that
# defines just the symbols libLLVM imports from it, with their versions; the
# functions abort with a message, libxml2's xmlFree is free. LLVM calls Z3
# only for the static analyzer's Z3 constraint solver and libxml2 only to merge
# Windows manifests (llvm-mt, lld-link): PoCL does neither. This saves about
# 15 MB of the compressed pack. POCL_PACK_STUBS="" packs the real ones.
for n in $stubs; do
  [ -f "$pack/deps/$n" ] || continue
  stubdir=$(mktemp -d)
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    printf 'static void die(const char *f) { fprintf(stderr, "%%s called, but %s is a stub (scripts/pocl_pack.sh)\\n", f); abort(); }\n' "$n"
  } >"$stubdir/stub.c"
  : >"$stubdir/syms"
  # Undefined symbols of libLLVM (and libclang-cpp, libpocl) that the real library defines.
  objdump -T "$pack/deps/$n" | awk '$0 !~ /\*UND\*/ && ($2 ~ /g/ || $3 ~ /^D/) {print $NF}' | sort -u >"$stubdir/exports"
  for u in "$pack/deps/libLLVM-15.so.1" "$pack/deps/libclang-cpp.so.15" "$libdir/libpocl.so.2"; do
    if [ -f "$u" ]; then objdump -T "$u"; fi | awk '/\*UND\*/ {v = ($(NF-1) ~ /^\(/) ? $(NF-1) : "-"; gsub(/[()]/, "", v); print $2, v, $NF}'
  done | sort -u | while read -r kind ver sym; do
    grep -qxF "$sym" "$stubdir/exports" || continue
    echo "$ver $sym" >>"$stubdir/syms"
    if [ "$sym" = xmlFree ]; then
      echo 'void (*xmlFree)(void *) = free;' >>"$stubdir/stub.c"
    elif [ "$kind" = DO ]; then
      echo "char ${sym}[64];" >>"$stubdir/stub.c"
    else
      echo "void $sym(void) { die(\"$sym\"); }" >>"$stubdir/stub.c"
    fi
  done
  # A version script: the version nodes the importers ask for, unversioned otherwise.
  if awk '$1 != "-"' "$stubdir/syms" | grep -q .; then
    awk '$1 != "-" {s[$1] = s[$1] "    " $2 ";\n"} END {for (v in s) printf "%s {\n  global:\n%s};\n", v, s[v]}' \
      "$stubdir/syms" >"$stubdir/version.map"
    # shellcheck disable=SC2054
    vflag=(-Wl,--version-script="$stubdir/version.map")
  else
    vflag=()
  fi
  gcc -shared -fPIC -O1 -o "$stubdir/$n" -Wl,-soname,"$n" "${vflag[@]}" "$stubdir/stub.c"
  echo "stub $n: $(wc -l <"$stubdir/syms") symbols ($(du -b "$pack/deps/$n" | cut -f1) bytes -> $(du -b "$stubdir/$n" | cut -f1))"
  mv "$stubdir/$n" "$pack/deps/$n"
  rm -rf "$stubdir"
done

# Debian's libraries are stripped already; --strip-unneeded drops a little more.
before=$(du -sb "$pack" | cut -f1)
for f in "$pack"/deps/* "$pack"/lib/x86_64-linux-gnu/libpocl.so.* "$pack"/lib/x86_64-linux-gnu/pocl/*.so; do
  [ -L "$f" ] || strip --strip-unneeded "$f"
done
after=$(du -sb "$pack" | cut -f1)

printf 'libpocl.so.2\n' >"$pack/pocl.icd"
{
  echo "source: $(. /etc/os-release; echo "$PRETTY_NAME"), $(dpkg-query -W -f='${Package} ${Version}\n' libpocl2 2>/dev/null)"
  echo "kernels: $kernels"
  echo "deps: $(ls "$pack/deps" | tr '\n' ' ')"
} >"$pack/MANIFEST"

if [ "${POCL_PACK_XZ:-1}" = 0 ]; then
  echo "packed into $pack: $(du -sh "$pack" | cut -f1) (POCL_PACK_XZ=0: no .pocl.tar.xz)"
  exit 0
fi

# One xz stream, one block (xz -T0 would cut it into 192 MiB blocks and lose
# a little), with the x86 BCJ filter: ~6% smaller than plain -9e on LLVM and
# clang (libLLVM 117 MB -> 21.7 MB, libclang-cpp 62 MB -> 10.5 MB); 2-3
# minutes on one core.
rm -f "$root/.pocl.tar.xz"
(cd "$root" && find .pocl -mindepth 1 \( -type f -o -type l \) | LC_ALL=C sort |
  tar --owner=0 --group=0 --numeric-owner -cf - --no-recursion -T -) |
  xz -T1 --x86 --lzma2=preset=9e >"$root/.pocl.tar.xz"

size=$(stat -c %s "$root/.pocl.tar.xz")
echo "stripping: $before -> $after bytes"
du -b "$pack"/deps/* "$pack"/lib/x86_64-linux-gnu/libpocl.so.2.* | sort -rn | awk '{printf "  %10d %s\n", $1, $2}'
echo "packed into $pack: $(du -sh "$pack" | cut -f1); carry .pocl.tar.xz ($size bytes, $(du -h "$root/.pocl.tar.xz" | cut -f1))"
if [ "$size" -gt "$limit" ]; then
  echo "WARNING: .pocl.tar.xz is over 34 MiB ($size > $limit bytes); try POCL_PACK_KERNELS=avx512" >&2
  exit 1
fi
