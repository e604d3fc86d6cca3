#!/bin/sh
# cli_engine_hostile_test.sh — `lorascope-train engine` fed what a hostile or broken GUI could send
# (issue 20 items 1, 2, 9): each line gets an error event naming the problem; the engine neither
# aborts nor crashes and exits 0 when its input ends. A start whose "out" is a folder with files
# in it (a temporary folder standing in for /etc) or the model's own folder is refused, and
# nothing is written there (issue 31 item 1: /etc/config.json was written).
#   cli_engine_hostile_test.sh LORASCOPE_TRAIN
set -u
train="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect() {  # name input fragment
  printf '%b\n' "$2" >"$dir/in"
  "$train" engine <"$dir/in" >"$dir/out" 2>"$dir/err"
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q '"type":"error"' "$dir/out" && grep -qF "$3" "$dir/out"; then
    echo "PASS $1"
  else
    echo "FAIL $1 (exit $rc)"; head -c 600 "$dir/out"; echo; head -c 300 "$dir/err"; fail=1
  fi
}
expect "byte 0xff" '\377' 'not valid JSON'
expect "line cut inside a character" '{"v":1,"type":"stop"\303' 'not valid JSON'
expect "demo \"yes\" names the field" \
  "{\"v\":1,\"type\":\"start\",\"config\":{\"demo\":\"yes\",\"out\":\"$dir/run\"}}" \
  '\"demo\" must be true or false, got \"yes\"'
python3 -c "print('{\"v\":1,\"type\":\"start\",\"config\":{\"a\":' + '['*100000 + ']'*100000 + '}}')" \
  >"$dir/deep" 2>/dev/null ||
  awk 'BEGIN { s = "{\"v\":1,\"type\":\"start\",\"config\":{\"a\":"; for (i = 0; i < 100000; i++) s = s "["; for (i = 0; i < 100000; i++) s = s "]"; print s "}}" }' >"$dir/deep"
"$train" engine <"$dir/deep" >"$dir/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q 'nested deeper than 256 levels' "$dir/out"; then
  echo "PASS 100,000 levels of nesting"
else
  echo "FAIL 100,000 levels of nesting (exit $rc)"; fail=1
fi

# Output folders: a stand-in for /etc, then the demo model's own folder.
mkdir -p "$dir/etc"
echo "root:x:0:0:root:/root:/bin/sh" >"$dir/etc/passwd"
echo "127.0.0.1 localhost" >"$dir/etc/hosts"
export LORASCOPE_CACHE_DIR="$dir/cache"
expect "out: a folder with files that is not a run" \
  "{\"v\":1,\"type\":\"start\",\"config\":{\"demo\":true,\"out\":\"$dir/etc\"}}" \
  'is not empty and is not a LoRAscope run: it holds hosts, passwd'
if [ "$(ls "$dir/etc" | tr '\n' ' ')" = "hosts passwd " ]; then
  echo "PASS nothing was written into it"
else
  echo "FAIL the folder now holds: $(ls -A "$dir/etc")"; fail=1
fi
model=$(dirname "$(ls "$dir"/cache/*/model.safetensors | head -n 1)")
before=$(cksum <"$model/config.json")
expect "out: the model's own folder" \
  "{\"v\":1,\"type\":\"start\",\"config\":{\"demo\":true,\"out\":\"$model\"}}" \
  "is the model's folder"
if [ "$(cksum <"$model/config.json")" = "$before" ] && [ ! -e "$model/checkpoints" ]; then
  echo "PASS the model's config.json is untouched"
else
  echo "FAIL the model's folder was written"; fail=1
fi
exit "$fail"
