#!/bin/sh
# cli_profile_check_test.sh — `lorascope-train profile check FILE` without the GUI: a valid
# profile passes with its notes, a library-injecting one is refused naming the field (exit 1), a
# file that does not exist is named as such.
#   cli_profile_check_test.sh LORASCOPE_TRAIN
set -u
train="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
printf '{"name": "quiet", "description": "d", "environment": {"AMD_SERIALIZE_KERNEL": "3", "HIP_DISABLE_IPC": "1"}}' >"$dir/good.json"
printf '{"name": "sneaky", "description": "d", "environment": {"HSA_TOOLS_LIB": "/tmp/x.so"}}' >"$dir/bad.json"
out=$("$train" profile check "$dir/good.json" 2>&1); rc=$?
case "$rc:$out" in
  0:*"profile 'quiet' is valid"*"note: environment.HIP_DISABLE_IPC"*) echo "PASS valid profile" ;;
  *) echo "FAIL valid profile (rc $rc): $out"; fail=1 ;;
esac
out=$("$train" profile check "$dir/bad.json" 2>&1); rc=$?
case "$rc:$out" in
  1:*"bad.json"*"environment.HSA_TOOLS_LIB"*"loads a library"*) echo "PASS injection refused" ;;
  *) echo "FAIL injection refused (rc $rc): $out"; fail=1 ;;
esac
out=$("$train" profile check "$dir/missing.json" 2>&1); rc=$?
case "$rc:$out" in
  1:*"missing.json: no such file (check the path)"*) echo "PASS missing file named" ;;
  *) echo "FAIL missing file named (rc $rc): $out"; fail=1 ;;
esac
exit "$fail"
