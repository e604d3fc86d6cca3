#!/usr/bin/env python3
"""Reference ids for backend/text, produced by Hugging Face `tokenizers` (0.23 on the GPU machine).

Trains five small BPE tokenizers on the corpus below, in the layouts LoRAscope must read:
  llama3_bpe     byte-level BPE, Llama-3 Split regex (\\p{N}{1,3}), ignore_merges, merges as
                 [a, b] pairs, Llama-3 special tokens, TemplateProcessing "<|begin_of_text|> $A"
  qwen2_bpe      byte-level BPE, Qwen2 Split regex (\\p{N}), NFC normalizer, merges rewritten as
                 "a b" strings, ChatML special tokens, a normalized added token and a raw one
  gpt2_bpe       byte-level BPE through ByteLevel(add_prefix_space, use_regex) alone
  spm_bpe        SentencePiece-style: Prepend("▁") + Replace(" ", "▁") normalizer, byte_fallback
                 <0xNN> tokens in the model vocabulary, decoder Replace/ByteFallback/Fuse/Strip
  spm_metaspace  Metaspace pre-tokenizer (prepend_scheme first) and decoder, unk_token with
                 fuse_unk, added tokens with lstrip / rstrip / single_word
saves their tokenizer.json files, and records HF's ids for a corpus of hard strings (plus seeded
random strings) and decode results of seeded random id sequences into reference_ids.json. With
--fixtures DIR it also records ids for DIR/*.tokenizer.json (the shared fixtures, which are not
committed: only their ids are).

Usage (no network needed):
  python3 scripts/reference/tokenizers.py --out tests/text/data [--fixtures DIR]
  python3 scripts/reference/tokenizers.py --bench TOKENIZER_JSON ALPACA_JSON
    HF's throughput on an alpaca-style dataset, the baseline of tests/text/bench_tokenizer (each
    text is instruction + "\n" + input + "\n" + output, as there).
"""
import argparse
import json
import os
import random
import re
import sys
import traceback

# This file is called tokenizers.py: keep its own folder off the import path so that the
# import below finds the Hugging Face package, not this script.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import tokenizers  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers  # noqa: E402
from tokenizers import pre_tokenizers, trainers  # noqa: E402

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = """
The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a single step.
It's a truth universally acknowledged that a single model in possession of a good dataset must be in want of a GPU.
I'm sure they'd've agreed; you'll see that we're fine and he's here. Don't worry, it isn't broken.
Training a LoRA adapter on a consumer GPU needs careful memory planning: weights, activations, gradients.
The learning rate was 2e-4, the batch size 16, the sequence length 2048 and the warmup 100 steps.
In 2023 the model scored 71.3 on the benchmark; in 2024 it reached 78.9 after 12,000 steps.
Numbers like 1234567890, 3.14159, 2.71828, 1,000,000 and 0.001 appear in technical writing.
Call 555-0123 or write to support@example.com before 5:30 PM on 2024-06-01.
def train(model, data, epochs=3):
    for epoch in range(epochs):
        for batch in data:
            loss = model(batch).loss
            loss.backward()
    return model
for (int i = 0; i < n; ++i) { sum += values[i] * weights[i]; }
{"instruction": "Summarize the text.", "input": "", "output": "The text is short."}
Tabs\tand\tnewlines\nare\nwhitespace too.\r\nWindows uses CRLF line endings.\r\n
Le café est très bon, n'est-ce pas ? Où est la bibliothèque ? Ça va très bien, merci.
Der schnelle braune Fuchs springt über den faulen Hund. Größe, Straße, Mädchen, schön.
El niño pequeño comió una manzana. ¿Dónde está la estación? ¡Qué bueno!
Быстрая коричневая лиса прыгает через ленивую собаку. Привет, как дела?
Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.
日本語の文章です。東京は日本の首都です。今日は良い天気ですね。
我们正在学习自然语言处理。你好，世界！今天天气很好。
한국어 문장입니다. 안녕하세요, 만나서 반갑습니다.
مرحبا بكم في عالم معالجة اللغة الطبيعية.
Emoji are common online 😀 👍 ❤️ 🎉 and so are hashtags like #MachineLearning and @mentions.
Questions? Answers! Ellipses... dashes — and en–dashes; quotes "like this" and 'this'.
The mitochondria is the powerhouse of the cell. Photosynthesis converts light into chemical energy.
Shakespeare wrote: "To be, or not to be, that is the question." Hamlet, Act III, Scene I.
Water boils at 100 degrees Celsius at sea level, which is 212 degrees Fahrenheit.
The Fibonacci sequence goes 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610.
SELECT name, COUNT(*) FROM users WHERE age > 21 GROUP BY name ORDER BY 2 DESC;
https://huggingface.co/docs/tokenizers/index is where the documentation lives.
Remember: practice makes perfect, and perfect practice makes it permanent.
"""

SPECIAL_LLAMA3 = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>"]
SPECIAL_CHATML = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SPM_SPECIAL = ["<unk>", "<s>", "</s>"]
BYTE_TOKENS = ["<0x%02X>" % b for b in range(256)]

HARD_STRINGS = [
    "",
    " ",
    "  ",
    "Hello world",
    "Hello, world! How are you today?",
    "I'm sure it's what they'd've wanted; you'll see, we're fine, he's here. I'M SURE IT'S FINE.",
    "don't DON'T Don't can't won't shouldn't y'all o'clock",
    "1 12 123 1234 12345 123456 1234567 3.14159 -42 1,000,000 2024-06-01 0x1F",
    "Version 2.0.1 costs $19.99 (or €17,50) — 100% off!",
    "   leading spaces",
    "trailing spaces   ",
    "multiple     spaces    between   words",
    "tab\tseparated\tvalues\t\t",
    "\tleading tab",
    "line one\nline two\n\nline four",
    "windows\r\nline\r\nendings\r\n",
    "\n\n\n",
    " \n \n",
    "\r",
    "mixed \t \n whitespace \u00a0 nbsp \u3000 ideographic \u2028 ls \u0085 nel \u2003 em",
    "日本語のテキストです。東京は大きい都市です。",
    "中文文本：你好，世界！我们在学习分词。",
    "한국어 텍스트입니다. 안녕하세요!",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "emoji 😀 😃 😄 👍🏽 👩🏾‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️",
    "flags 🇺🇸🇯🇵 keycap 1️⃣ skin 👋🏻👋🏿",
    "combining: e\u0301 a\u0308 n\u0303 (decomposed) vs é ä ñ (composed)",
    "Zalgo t\u0337\u0353e\u0335\u0354x\u0336t",
    "\ufb01 ligature, \uff21\uff4c\uff50\uff48\uff41 fullwidth, \u2460 circled, \u00bd fraction",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
    "text<|endoftext|>more text<|endoftext|>",
    "<s>[INST] hello [/INST] answer</s>",
    "<s>hello</s><s> spaced </s>",
    "almost special <|im_start and <|im_end| and <s and </s",
    "<mask> masked <mask>text   <mask>  end",
    "yes yesterday yes, eyes yes",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "def foo(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "{\"key\": \"value\", \"list\": [1, 2, 3]}",
    "https://example.com/path?query=1&x=y#frag",
    "email@example.com @user #hashtag",
    "a" * 80,
    "The quick brown fox jumps over the lazy dog. " * 3,
    "!!!???...,,,;;;:::",
    "\u200b zero width \u200d joiner \ufeff bom",
    "café cafe\u0301 CAFÉ Cafe\u0301",
    "\u216b\u2162 roman, \u0663\u0664\u0665 arabic-indic digits, \u0e51\u0e52\u0e53 thai digits",
    "x",
    "'",
    "'s",
    " 's",
    "''''",
    "\u00e9",
    "\U0001F600",
    "ÀÁÂÃÄÅàáâãäå",
    "\u2018curly quotes\u2019 \u201cdouble\u201d",
    "▁already▁has▁metaspace",
    "<0x41> literal byte token text",
    "İstanbul ǅ ß ẞ",
    "\x00nul and \x07bell and \x1b[0mescape",
    "Ω≈ç√∫˜µ≤≥÷ ∑ ∞",
]

POOLS = [
    "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789",
    " \t\n\r  ", ".,;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`",
    "日本語中文한국어テキスト", "éèêëàâäôöûüçñÉÀ", "привет мир",
    "\u0301\u0308\u0303\u200d\ufe0f", "😀👍🏽❤👩‍💻🎉",
]
RANDOM_TOKENS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<s>", "</s>",
                 "<mask>", " yes ", "'s", "'ll", "café", "<tool_call>"]


def random_strings(count, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.08:
                parts.append(rng.choice(RANDOM_TOKENS))
            else:
                pool = rng.choice(POOLS)
                parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
        out.append("".join(parts))
    return out


def corpus_lines():
    lines = [line for line in CORPUS.split("\n") if line.strip()]
    # Several passes with variations so that merges have counts to rank by.
    out = []
    for i in range(4):
        for line in lines:
            out.append(line)
            out.append(line.lower() if i % 2 else line.upper())
    return out


def with_json(tok, edit):
    spec = json.loads(tok.to_str())
    edit(spec)
    return Tokenizer.from_str(json.dumps(spec, ensure_ascii=False))


def train_bytelevel(pattern, vocab_size, specials):
    tok = Tokenizer(models.BPE())
    if pattern is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    return tok, trainer


def build_llama3():
    tok, trainer = train_bytelevel(LLAMA3_PATTERN, 1500, SPECIAL_LLAMA3)
    tok.train_from_iterator(corpus_lines(), trainer=trainer)

    def edit(spec):
        spec["model"]["ignore_merges"] = True
        spec["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m
                                   for m in spec["model"]["merges"]]
        bos = spec["model"]["vocab"]["<|begin_of_text|>"]
        spec["post_processor"] = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [bos],
                                                     "tokens": ["<|begin_of_text|>"]}},
        }
    return with_json(tok, edit)


def build_qwen2():
    tok, trainer = train_bytelevel(QWEN2_PATTERN, 1200, SPECIAL_CHATML)
    tok.normalizer = normalizers.NFC()
    tok.train_from_iterator(corpus_lines(), trainer=trainer)
    tok.add_tokens([AddedToken("<tool_call>", normalized=False, special=False),
                    AddedToken("</tool_call>", normalized=False, special=False),
                    AddedToken("café", normalized=True, special=False)])

    def edit(spec):
        merges = spec["model"]["merges"]
        for m in merges:
            pair = m if isinstance(m, list) else m.split(" ")
            assert all(" " not in t for t in pair), pair
        spec["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in merges]
        spec["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False,
                                  "trim_offsets": False, "use_regex": False}
    return with_json(tok, edit)


def build_gpt2():
    tok, trainer = train_bytelevel(None, 1000, ["<|endoftext|>"])
    tok.train_from_iterator(corpus_lines(), trainer=trainer)
    return tok


def build_spm_bpe():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    # Train on words (split before each ▁) so merges stay inside words, as SentencePiece's do;
    # the saved tokenizer has no pre-tokenizer, like Llama-2's tokenizer.json.
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(content=" ", left=1, right=0)])
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=SPM_SPECIAL + BYTE_TOKENS,
                                  show_progress=False)
    tok.train_from_iterator(corpus_lines(), trainer=trainer)

    def edit(spec):
        # <0xNN> stay in the model vocabulary but are not added tokens (as in Llama-2).
        spec["added_tokens"] = [t for t in spec["added_tokens"]
                                if not re.fullmatch(r"<0x[0-9A-F]{2}>", t["content"])]
        spec["pre_tokenizer"] = None
        bos = spec["model"]["vocab"]["<s>"]
        spec["post_processor"] = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [bos], "tokens": ["<s>"]}},
        }
    return with_json(tok, edit)


def build_spm_metaspace():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=SPM_SPECIAL, limit_alphabet=120,
                                  show_progress=False)
    tok.train_from_iterator(corpus_lines(), trainer=trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True,
                                       normalized=False)])
    tok.add_tokens([AddedToken("yes", single_word=True, special=False, normalized=True)])
    return tok


BUILDERS = {
    "llama3_bpe": build_llama3,
    "qwen2_bpe": build_qwen2,
    "gpt2_bpe": build_gpt2,
    "spm_bpe": build_spm_bpe,
    "spm_metaspace": build_spm_metaspace,
}


def record(tok, texts, seed):
    entry = {"ids": [], "ids_post": [], "decoded": [], "decoded_post": [],
             "decoded_post_skip": [], "decode_cases": []}
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        post = tok.encode(text, add_special_tokens=True).ids
        entry["ids"].append(ids)
        entry["ids_post"].append(post)
        entry["decoded"].append(tok.decode(ids, skip_special_tokens=False))
        entry["decoded_post"].append(tok.decode(post, skip_special_tokens=False))
        entry["decoded_post_skip"].append(tok.decode(post, skip_special_tokens=True))
    rng = random.Random(seed)
    size = tok.get_vocab_size(with_added_tokens=True)
    valid = sorted(set(tok.get_vocab(with_added_tokens=True).values()))
    added = sorted(tok.get_added_tokens_decoder().keys()) or valid
    for _ in range(80):
        ids = [rng.choice(added) if rng.random() < 0.2 else rng.choice(valid)
               for _ in range(rng.randint(1, 10))]
        entry["decode_cases"].append({"ids": ids,
                                      "text": tok.decode(ids, skip_special_tokens=False),
                                      "text_skip": tok.decode(ids, skip_special_tokens=True)})
    entry["vocab_size_with_added"] = size
    return entry


def dump(obj, path):
    # One case per line keeps the file diffable without a line per id.
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        keys = list(obj.keys())
        for i, key in enumerate(keys):
            value = obj[key]
            f.write(json.dumps(key) + ": ")
            if isinstance(value, dict):
                f.write("{\n")
                sub = list(value.keys())
                for j, k in enumerate(sub):
                    f.write("  " + json.dumps(k) + ": " +
                            json.dumps(value[k], ensure_ascii=False, separators=(",", ":")))
                    f.write(",\n" if j + 1 < len(sub) else "\n")
                f.write("}")
            else:
                f.write(json.dumps(value, ensure_ascii=False))
            f.write(",\n" if i + 1 < len(keys) else "\n")
        f.write("}\n")


def bench(tokenizer_path, dataset_path):
    import time
    tok = Tokenizer.from_file(tokenizer_path)
    with open(dataset_path, encoding="utf-8") as f:
        rows = json.load(f)
    texts = [r["instruction"] + "\n" + r.get("input", "") + "\n" + r["output"] for r in rows]
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    runs = [("encode (one call per text)",
             lambda: [tok.encode(t, add_special_tokens=False) for t in texts]),
            ("encode_batch (all threads)",
             lambda: tok.encode_batch(texts, add_special_tokens=False))]
    for label, run in runs:
        run()
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            out = run()
            best = min(best, time.perf_counter() - start)
        ntok = sum(len(e.ids) for e in out)
        print(f"HF {label}: {nbytes / best / 1e6:.2f} MB/s, {ntok / best:.0f} tokens/s "
              f"({len(texts)} texts, {nbytes} bytes, {ntok} tokens, best of 5)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--fixtures", default=None)
    parser.add_argument("--bench", nargs=2, metavar=("TOKENIZER_JSON", "ALPACA_JSON"))
    args = parser.parse_args()
    if args.bench:
        return bench(*args.bench)
    if not args.out:
        parser.error("--out is required (or --bench)")
    os.makedirs(args.out, exist_ok=True)
    texts = HARD_STRINGS + random_strings(120, seed=20260601)
    result = {"about": {"tokenizers_version": tokenizers.__version__,
                        "script": "scripts/reference/tokenizers.py",
                        "hard_strings": len(HARD_STRINGS)},
              "texts": {"all": texts}}
    failures = 0
    for index, (name, build) in enumerate(BUILDERS.items()):
        try:
            tok = build()
            path = os.path.join(args.out, name + ".tokenizer.json")
            tok.save(path, pretty=False)
            result[name] = {"file": name + ".tokenizer.json", **record(tok, texts, 100 + index)}
            print(f"{name}: vocab {tok.get_vocab_size()} -> {path} "
                  f"({os.path.getsize(path)} bytes)", flush=True)
        except Exception:  # keep going: the other tokenizers are still worth recording
            failures += 1
            traceback.print_exc()
    if args.fixtures and os.path.isdir(args.fixtures):
        for index, file in enumerate(sorted(os.listdir(args.fixtures))):
            if not file.endswith(".tokenizer.json"):
                continue
            try:
                tok = Tokenizer.from_file(os.path.join(args.fixtures, file))
                name = "fixture_" + file[: -len(".tokenizer.json")]
                result[name] = {"file": "fixtures:tokenizers/" + file,
                                **record(tok, texts, 200 + index)}
                print(f"{name}: recorded", flush=True)
            except Exception:
                failures += 1
                traceback.print_exc()
    dump(result, os.path.join(args.out, "reference_ids.json"))
    print(f"wrote {os.path.join(args.out, 'reference_ids.json')}, failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
