#!/usr/bin/env python3
"""Reference renderings of real chat templates, produced by transformers' apply_chat_template.

Renders every DIR/*.jinja (the shared fixtures: ten templates from chujiezheng/chat_templates,
which are not committed; only their renderings are) over the conversations below — system
prompts, multi-turn, tool calls and tool results with a tool list, Unicode and whitespace,
and roles in an order some templates refuse — with and without the generation prompt, and
writes tests/text/data/chat_template_reference.json:

  {"transformers": VERSION, "jinja2": VERSION, "special_tokens": {...},
   "conversations": {NAME: {"messages": [...], "tools": [...] | null}},
   "cases": [{"template": FILE, "conversation": NAME, "add_generation_prompt": BOOL,
              "output": TEXT} | {..., "error": MESSAGE}]}

tests/text/test_jinja_reference.cpp renders the same cases with LoRAscope's Jinja interpreter
and requires byte-identical text (or the same raise_exception message).

Usage (no network: the tokenizer is built in memory):
  python3 scripts/reference/chat_templates.py --fixtures ../shared/fixtures/chat_templates \
      --out tests/text/data/chat_template_reference.json
"""
import argparse
import glob
import json
import os
import sys

# scripts/reference/tokenizers.py would shadow Hugging Face's `tokenizers` package (which
# transformers imports): keep this folder off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "threshold": {"type": "number", "default": 0.5},
            },
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "single_user": {"messages": [{"role": "user", "content": "Hello!"}], "tools": None},
    "system_multi_turn": {
        "messages": [
            {"role": "system", "content": "  You are a terse assistant.\n"},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4."},
            {"role": "user", "content": "  And 3+3?\n\n"},
        ],
        "tools": None,
    },
    "multi_turn_answered": {
        "messages": [
            {"role": "user", "content": "Name a prime."},
            {"role": "assistant", "content": "7"},
            {"role": "user", "content": "Another one, please."},
            {"role": "assistant", "content": "11\n"},
        ],
        "tools": None,
    },
    "unicode_and_quotes": {
        "messages": [
            {"role": "system", "content": "Réponds en français — s'il te plaît."},
            {"role": "user", "content": "Grüß dich! 你好 🙂 \"quoted\" and {braces} and {{ jinja }}"},
            {"role": "assistant", "content": "Bonjour\tà toi\u00a0!"},
        ],
        "tools": None,
    },
    "tool_call_round_trip": {
        "messages": [
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{
                    "type": "function",
                    "function": {"name": "get_weather",
                                 "arguments": {"city": "Paris", "unit": "celsius", "days": 2}},
                }],
            },
            {"role": "tool", "name": "get_weather", "content": "{\"temperature\": 18.5, \"sky\": \"clear\"}"},
            {"role": "tool", "name": "get_weather", "content": "{\"temperature\": 17, \"sky\": \"rain\"}"},
            {"role": "assistant", "content": "It is 18.5 °C and clear today."},
        ],
        "tools": [WEATHER_TOOL],
    },
    "tools_with_system": {
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
        "tools": [WEATHER_TOOL, {"type": "function", "function": {
            "name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}],
    },
    "roles_not_alternating": {
        "messages": [
            {"role": "user", "content": "First."},
            {"role": "user", "content": "Second, without an answer between."},
        ],
        "tools": None,
    },
}


def make_tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL_TOKENS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixtures", required=True, help="folder of *.jinja chat templates")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import jinja2
    import transformers

    tokenizer = make_tokenizer()
    cases = []
    templates = sorted(glob.glob(os.path.join(args.fixtures, "*.jinja")))
    if not templates:
        raise SystemExit(f"no *.jinja files in {args.fixtures}")
    for path in templates:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for name, conversation in CONVERSATIONS.items():
            for generation_prompt in (False, True):
                case = {"template": os.path.basename(path), "conversation": name,
                        "add_generation_prompt": generation_prompt}
                try:
                    case["output"] = tokenizer.apply_chat_template(
                        conversation["messages"], tools=conversation["tools"],
                        chat_template=source, tokenize=False,
                        add_generation_prompt=generation_prompt)
                except Exception as e:  # raise_exception in the template: TemplateError
                    case["error"] = str(e)
                cases.append(case)
    result = {
        "transformers": transformers.__version__,
        "jinja2": jinja2.__version__,
        "special_tokens": SPECIAL_TOKENS,
        "conversations": CONVERSATIONS,
        "cases": cases,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("error" in c for c in cases)
    print(f"chat_templates.py: {len(cases)} cases from {len(templates)} templates "
          f"({errors} raise an error) with transformers {transformers.__version__}, "
          f"jinja2 {jinja2.__version__} -> {args.out}")


if __name__ == "__main__":
    main()
