#!/bin/sh
# `xylem info` lists every framework, present or not, with the reason; the
# broken test plugins must show as unavailable, each with its reason.
# Usage: tool_info_test.sh <path to the xylem command>   (XYLEM_PLUGIN_PATH: the test plugins)
set -u
out=$("$1" info) || { echo "xylem info failed"; exit 1; }
echo "$out"
status=0
expect() {
  if ! printf '%s\n' "$out" | grep -Eq "$1"; then
    echo "MISSING: a line matching: $1"
    status=1
  fi
}
expect '^ +native +available'
expect '^ +mirror +available'
expect '^ +(opencl|cuda) +(available|unavailable)'
expect '^ +badversion +unavailable: .*API version'
expect '^ +nosymbol +unavailable: .*xylem_plugin_entry'
expect '^ +refuses +unavailable: .*no hardware on purpose'
expect 'kind other'
exit $status
