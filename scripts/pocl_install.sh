#!/usr/bin/env bash
# scripts/pocl_install.sh: put the PoCL that scripts/pocl_pack.sh packed (Debian
# 12's pocl 3.1, the CPU OpenCL driver) in place on the lent GPU machine's
# host (Ubuntu 24.04, run as root), so that xylem's OpenCL backend finds a CPU
# device there. Run it in the repository root before the benchmark:
#
#   run(command="scripts/pocl_install.sh && . /opt/pocl/env.sh &&
#                HOST_OPS2_BACKENDS='native opencl' scripts/gpu.sh host_ops2",
#       carry=[".gpu.tar.xz", ".pocl.tar.xz"])
#
# What it does:
#   - extracts .pocl.tar.xz (or $1) into .pocl/ unless that is there already;
#   - copies libpocl.so.2 to $POCL_PREFIX/lib/x86_64-linux-gnu, the device
#     modules to $POCL_PREFIX/lib/x86_64-linux-gnu/pocl and the headers and
#     kernel-*.bc to $POCL_PREFIX/share/pocl; POCL_PREFIX is /usr by default,
#     the paths Debian's build was made for (the build is relocatable, too: it
#     looks for pocl/ and ../../share/pocl beside the libpocl.so.2 it was
#     loaded from, so another prefix works as well);
#   - copies into $POCL_DEPS (default /opt/pocl/deps) each carried dependency
#     library (LLVM 15, libclang-cpp 15, hwloc, libedit, libffi, ..., and the
#     stubs of z3 and libxml2 that scripts/pocl_pack.sh made) whose soname the
#     system's loader cache lacks (POCL_DEPS_ALL=1: all of them), so that the
#     directory, put first in LD_LIBRARY_PATH, never shadows a newer Ubuntu
#     library with an older Debian one (nor a real libxml2 with the stub);
#   - writes $POCL_VENDORS/pocl.icd (default /etc/OpenCL/vendors) naming
#     libpocl.so.2 by its absolute path;
#   - checks the kernel link: PoCL compiles each kernel in process with
#     LLVM, then has clang's driver run the system's linker,
#       /usr/bin/ld -shared -o K.so K.o -L<gcc dir> ... -lm -lgcc -lgcc_s -lc
#     (ld looked up beside /usr/lib/llvm-15/bin, which is absent, then in
#     PATH; the -L of the newest /usr/lib/gcc/x86_64-linux-gnu/N holding
#     crtbegin.o; -nostartfiles, so no crt*.o is linked). Without such a GCC
#     directory (no gcc installed) it makes a minimal one,
#     /usr/lib/gcc/x86_64-linux-gnu/12 with an empty crtbegin.o (what clang's
#     driver looks for), an empty libgcc.a and a libgcc_s.so script naming the
#     system's libgcc_s.so.1 (kernels that need a libgcc helper then get it
#     from libgcc_s.so.1 at load time). It then links a test object the same
#     way, and fails if that fails;
#   - writes $POCL_ENV (default /opt/pocl/env.sh) to source:
#       LD_LIBRARY_PATH   $POCL_DEPS first (libpocl's own dependencies; the
#                         ICD loader libOpenCL.so.1 comes from .gpu/deps,
#                         which scripts/gpu.sh's setup puts in front)
#       OCL_ICD_VENDORS   $POCL_VENDORS/pocl.icd: ocl-icd (the loader in
#                         .gpu/deps, Debian's 2.3.1) then loads PoCL alone,
#                         not an nvidia.icd the GPU machine's
#                         /etc/OpenCL/vendors may hold too; set it to the
#                         directory to see every platform
#       POCL_CACHE_DIR    /tmp/pocl-cache (PoCL's kernel cache; the default,
#                         ~/.cache/pocl, works too as root)
#       POCL_DEVICES      pthread (the multithreaded CPU device alone)
#     and prints them. PoCL's threads: POCL_MAX_PTHREAD_COUNT (default every
#     core); xylem passes XYLEM_NATIVE_THREADS to its native backend only.
#     POCL_DEBUG=all prints what PoCL does, should anything fail.
#   - lists the OpenCL devices through .gpu's build (xylem info), when there.
#
# It writes only below $POCL_PREFIX/{lib/x86_64-linux-gnu/libpocl.so.2*,
# lib/x86_64-linux-gnu/pocl,share/pocl}, $POCL_DEPS, $POCL_VENDORS/pocl.icd,
# $POCL_ENV and, when the machine has no GCC directory, the minimal one above, and
# refuses to replace a different libpocl.so.2 unless POCL_FORCE=1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tarball=${1:-$root/.pocl.tar.xz}
pack=$root/.pocl
prefix=${POCL_PREFIX:-/usr}
deps=${POCL_DEPS:-/opt/pocl/deps}
vendors=${POCL_VENDORS:-/etc/OpenCL/vendors}
envfile=${POCL_ENV:-/opt/pocl/env.sh}
libdir=$prefix/lib/x86_64-linux-gnu
sharedir=$prefix/share/pocl

if [ ! -f "$pack/MANIFEST" ]; then
  [ -f "$tarball" ] || { echo "no $tarball: run scripts/pocl_pack.sh here first and carry .pocl.tar.xz" >&2; exit 2; }
  tar -C "$root" -xJf "$tarball"
fi
cat "$pack/MANIFEST"

# The driver, its modules and its data.
real=$(basename "$(readlink -f "$pack/lib/x86_64-linux-gnu/libpocl.so.2")")
if [ -e "$libdir/libpocl.so.2" ] && ! cmp -s "$libdir/libpocl.so.2" "$pack/lib/x86_64-linux-gnu/$real" &&
  [ "${POCL_FORCE:-0}" != 1 ]; then
  echo "$libdir/libpocl.so.2 is there and differs from the packed one; POCL_FORCE=1 replaces it" >&2
  exit 2
fi
mkdir -p "$libdir/pocl" "$sharedir" "$deps" "$vendors" "$(dirname "$envfile")"
cp "$pack/lib/x86_64-linux-gnu/$real" "$libdir/$real"
ln -sfn "$real" "$libdir/libpocl.so.2"
cp "$pack"/lib/x86_64-linux-gnu/pocl/*.so "$libdir/pocl/"
cp -r "$pack"/share/pocl/. "$sharedir/"

# Dependencies the system lacks (by soname, in the loader's cache).
have=$(ldconfig -p 2>/dev/null | awk '$2 ~ /x86-64/ {print $1}' | sort -u)
copied=() skipped=()
for f in "$pack"/deps/*; do
  name=$(basename "$f")
  if [ "${POCL_DEPS_ALL:-0}" != 1 ] && grep -qxF "$name" <<<"$have"; then
    skipped+=("$name")
  else
    cp "$f" "$deps/"
    copied+=("$name")
  fi
done
echo "into $deps: ${copied[*]:-nothing}"
echo "the system's own: ${skipped[*]:-none}"

printf '%s\n' "$libdir/libpocl.so.2" >"$vendors/pocl.icd"

cat >"$envfile" <<EOF
# PoCL (scripts/pocl_install.sh): source before running xylem's OpenCL backend.
export LD_LIBRARY_PATH="$deps\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export OCL_ICD_VENDORS="$vendors/pocl.icd"
export POCL_CACHE_DIR="\${POCL_CACHE_DIR:-/tmp/pocl-cache}"
export POCL_DEVICES="\${POCL_DEVICES:-pthread}"
EOF
echo "== $envfile"
cat "$envfile"

# Every library libpocl and its modules need resolves.
missing=$(LD_LIBRARY_PATH="$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$libdir/libpocl.so.2" "$libdir"/pocl/*.so |
  grep 'not found' | grep -v 'libpocl-devices-basic.so' || true)
[ -z "$missing" ] || { echo "unresolved libraries:"; echo "$missing"; exit 1; } >&2

# The kernel link: a linker, and a GCC directory that clang's driver finds
# (it takes the newest /usr/lib/gcc/x86_64-linux-gnu/N with crtbegin.o).
ld=$(command -v ld || true)
[ -n "$ld" ] || { echo "no ld in PATH: PoCL cannot link kernels (it runs ld through clang's driver)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc_dir=$( (ls -d /usr/lib/gcc/x86_64-linux-gnu/*/crtbegin.o 2>/dev/null || true) | xargs -r -n1 dirname | sort -V | tail -1)
if [ -z "$gcc_dir" ]; then
  gcc_dir=/usr/lib/gcc/x86_64-linux-gnu/12
  echo "no GCC directory with crtbegin.o: making a minimal one in $gcc_dir"
  mkdir -p "$gcc_dir"
  : >"$tmp/empty"
  (cd "$tmp" && "$ld" -r -b binary -o "$gcc_dir/crtbegin.o" empty)
  [ -e "$gcc_dir/libgcc.a" ] || printf '!<arch>\n' >"$gcc_dir/libgcc.a"
  [ -e "$gcc_dir/libgcc_s.so" ] || echo 'GROUP ( /lib/x86_64-linux-gnu/libgcc_s.so.1 )' >"$gcc_dir/libgcc_s.so"
fi
# A test object: from the system's compiler when there, else an empty one
# from ld itself.
echo 'int pocl_link_check(int x) { return x + 1; }' >"$tmp/k.c"
if ! { command -v cc >/dev/null && cc -c -fPIC -o "$tmp/k.o" "$tmp/k.c" 2>/dev/null; }; then
  : >"$tmp/empty"
  (cd "$tmp" && "$ld" -r -b binary -o k.o empty)
fi
if "$ld" --hash-style=both --build-id --eh-frame-hdr -m elf_x86_64 -shared -o "$tmp/k.so" \
  -L"$gcc_dir" -L/lib/x86_64-linux-gnu -L/usr/lib/x86_64-linux-gnu "$tmp/k.o" \
  -lm -lgcc --as-needed -lgcc_s --no-as-needed -lc -lgcc --as-needed -lgcc_s --no-as-needed; then
  echo "kernel link check: ok ($ld, $gcc_dir)"
else
  echo "kernel link check failed: PoCL's kernels will not link ($ld, $gcc_dir)" >&2
  exit 1
fi

# The devices, through .gpu's build when scripts/gpu.sh has put it in place.
build=$(cat "$root/.gpu/build_path" 2>/dev/null || true)
if [ -n "$build" ] && [ -x "$build/bin/xylem" ]; then
  # shellcheck disable=SC1090
  (. "$envfile" && LD_LIBRARY_PATH="$root/.gpu/deps:$LD_LIBRARY_PATH" "$build/bin/xylem" info 2>&1 |
    sed -n '/^xylem frameworks/,/^  native/p') || true
fi
echo "ready: . $envfile"
