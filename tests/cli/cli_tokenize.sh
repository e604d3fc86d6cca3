#!/bin/sh
# cli_tokenize.sh — `lorascope-train tokenize` end to end: ids equal to Hugging Face's
# (from data/reference_ids.json), JSON-string lines, decode round trip, errors name the line.
#   cli_tokenize.sh LORASCOPE_TRAIN DATA_DIR
set -u
train="$1"
data="$2"
fail=0
check() {  # name expected actual
  if [ "$2" != "$3" ]; then
    printf 'FAIL %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3"
    fail=1
  else
    printf 'PASS %s\n' "$1"
  fi
}

ids=$(printf 'Hello, world! How are you today?\n' |
  "$train" tokenize --tokenizer "$data/llama3_bpe.tokenizer.json" --post-processor)
check "llama3 ids with <|begin_of_text|> (HF)" \
  "[0,44,287,80,83,16,1129,80,72,5,495,369,566,1085,265,325,69,93,35]" "$ids"

json_line='"line one\nline two\n\nline four"'
ids=$(printf '%s\n' "$json_line" | "$train" tokenize --tokenizer "$data/qwen2_bpe.tokenizer.json" --json)
check "qwen2 ids of a JSON-string line (HF)" "[956,377,71,201,956,263,89,81,201,201,956,316,478,84]" "$ids"
text=$(printf '%s\n' "$ids" | "$train" tokenize --tokenizer "$data/qwen2_bpe.tokenizer.json" --decode --json)
check "decode back to the same JSON string" "$json_line" "$text"

err=$(printf '[1, 2]\n[999999]\n' | "$train" tokenize --tokenizer "$data/qwen2_bpe.tokenizer.json" --decode 2>&1 >/dev/null)
case "$err" in
  *"stdin line 2: "*"cannot decode id 999999"*) check "bad id names the line" ok ok ;;
  *) check "bad id names the line" "stdin line 2: ... cannot decode id 999999" "$err" ;;
esac
# Issue 20 item 9: ids that are not whole numbers in range were taken as 1, 1 and 34.
for bad in '1.5' 'true' '4294967330' '-1'; do
  err=$(printf '[1, %s]\n' "$bad" | "$train" tokenize --tokenizer "$data/qwen2_bpe.tokenizer.json" --decode 2>&1 >/dev/null)
  case "$err" in
    *"stdin line 1: entry 1 ($bad) is not an id"*) check "decode refuses id $bad" ok ok ;;
    *) check "decode refuses id $bad" "stdin line 1: entry 1 ($bad) is not an id ..." "$err" ;;
  esac
done
# --json lines are decoded as they stream in: what is not one JSON string names its line and byte.
err=$(printf '"ok"\n"a" x\n' | "$train" tokenize --tokenizer "$data/qwen2_bpe.tokenizer.json" --json 2>&1 >/dev/null)
case "$err" in
  *"stdin line 2: unexpected text after the JSON string (byte 4 of the line)"*) check "--json line that is not one string" ok ok ;;
  *) check "--json line that is not one string" "stdin line 2: unexpected text after the JSON string ..." "$err" ;;
esac
exit "$fail"
