#!/bin/sh
# cli_profile_check_test.sh — `lorascope-train profile check FILE` without the GUI: a valid
# profile passes with its notes, a library-injecting one is refused naming the field (exit 1), a
# file that does not exist is named as such. Issue 31: every variable is counted (those only passed
# on to external trainers too: 100,000 of them read "0"); a FIFO or an oversized file is refused
# naming the limit; a log file a profile would point anywhere is refused.
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
python3 -c '
import json
print(json.dumps({"name": "many", "description": "d",
                  "environment": {"HIP_X%d" % i: "1" for i in range(3000)}}))' >"$dir/many.json"
out=$("$train" profile check "$dir/many.json" 2>&1); rc=$?
case "$rc:$out" in
  0:*"profile 'many' is valid (3000 environment variables)"*) echo "PASS every variable counted" ;;
  *) echo "FAIL every variable counted (rc $rc): $(echo "$out" | head -c 300)"; fail=1 ;;
esac
head -c 2000000 /dev/zero | tr '\0' ' ' >"$dir/big.json"
out=$("$train" profile check "$dir/big.json" 2>&1); rc=$?
case "$rc:$out" in
  1:*"big.json: is 1.91 MiB, more than the 1.00 MiB limit of a profile file"*) echo "PASS size cap" ;;
  *) echo "FAIL size cap (rc $rc): $out"; fail=1 ;;
esac
mkfifo "$dir/fifo.json"
out=$(timeout 20 "$train" profile check "$dir/fifo.json" 2>&1); rc=$?
case "$rc:$out" in
  1:*"fifo.json: cannot read: not a regular file"*) echo "PASS FIFO refused" ;;
  *) echo "FAIL FIFO refused (rc $rc): $out"; fail=1 ;;
esac
printf '{"name": "logs", "description": "d", "environment": {"HIPBLASLT_LOG_FILE": "/home/u/.bashrc"}}' >"$dir/log.json"
out=$("$train" profile check "$dir/log.json" 2>&1); rc=$?
case "$rc:$out" in
  1:*"environment.HIPBLASLT_LOG_FILE"*"files to load or write"*) echo "PASS log file refused" ;;
  *) echo "FAIL log file refused (rc $rc): $out"; fail=1 ;;
esac
exit "$fail"
