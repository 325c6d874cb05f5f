#!/bin/sh
# `xylem info` lists every framework, present or not, with the reason; the
# broken test plugins must show as unavailable, each with its reason. A
# truncated copy of a plugin earlier on the path is refused (never loaded)
# and shown under the working plugin it would have hidden.
# Usage: tool_info_test.sh <path to the xylem command>   (XYLEM_PLUGIN_PATH: the test plugins)
set -u
status=0
expect() {
  if ! printf '%s\n' "$out" | grep -Eq "$1"; then
    echo "MISSING: a line matching: $1"
    status=1
  fi
}
out=$("$1" info) || { echo "xylem info failed"; exit 1; }
echo "$out"
expect '^ +native +available'
expect '^ +mirror +available'
expect '^ +(opencl|cuda) +(available|unavailable)'
expect '^ +badversion +unavailable: .*API version'
expect '^ +nosymbol +unavailable: .*xylem_plugin_entry'
expect '^ +refuses +unavailable: .*no hardware on purpose'
expect 'kind other'
expect '^ +mpi +(available|unavailable: .+)'
expect '^ +tcp +available'

plugins=${XYLEM_PLUGIN_PATH%%:*}
broken=$(mktemp -d) || exit 1
trap 'rm -rf "$broken"' EXIT
size=$(wc -c < "$plugins/libxylem_mirror.so")
head -c $((size / 2)) "$plugins/libxylem_mirror.so" > "$broken/libxylem_mirror.so"
head -c 100 "$plugins/libxylem_mirror.so" > "$broken/libxylem_stub.so"
out=$(XYLEM_PLUGIN_PATH="$broken:$XYLEM_PLUGIN_PATH" "$1" info) || { echo "xylem info with broken plugins failed"; exit 1; }
echo "$out"
expect '^ +mirror +available \(.*/libxylem_mirror.so\)'
expect "^ +passed over $broken/libxylem_mirror.so: refused .*truncated"
expect '^ +stub +unavailable: refused libxylem_stub.so without loading it'
exit $status
