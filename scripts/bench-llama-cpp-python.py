#!/usr/bin/env python3
"""The reference side of `bugloop bench model`: the same GGUF, the same prompt (ChatML, as the
model's template renders it), greedy decoding, run by llama.cpp through the llama-cpp-python
package. Prints the same figures as `bugloop bench model --format json`.

Usage: bugloop bench prompt | python3 scripts/bench-llama-cpp-python.py MODEL.gguf [RUNS] [MAX_TOKENS]
(needs `pip install llama-cpp-python`; a benchmark, not a test).

Session mode, the reference side of `bugloop bench session`: the same four prompts (bugloop's
rendering of the conversation, its answers included) evaluated in order by one Llama object,
which keeps the longest prefix it shares with what it evaluated before; each turn's answer (as
bugloop gave it) is evaluated after the timing, untimed, as bugloop's context holds its own.
Usage: bugloop bench session --format json | python3 scripts/bench-llama-cpp-python.py MODEL.gguf --session
"""
import json
import os
import resource
import statistics
import sys
import time

import llama_cpp
from llama_cpp import Llama


def session(path: str) -> None:
    bench = json.load(sys.stdin)
    threads = os.cpu_count() or 1
    llm = Llama(model_path=path, n_ctx=4096, n_batch=512, n_threads=threads, n_threads_batch=threads, verbose=False)
    llm.reset()
    turns = []
    for turn in bench["turns"]:
        tokens = llm.tokenize(turn["prompt"].encode(), add_bos=False, special=True)
        # What Llama.generate(reset=False) does: keep the shared prefix (but the last token).
        held = list(llm._input_ids[: llm.n_tokens])
        kept = 0
        while kept < min(len(held), len(tokens) - 1) and held[kept] == tokens[kept]:
            kept += 1
        llm.n_tokens = kept
        llm._ctx.kv_cache_seq_rm(-1, kept, -1)
        t0 = time.perf_counter()
        llm.eval(tokens[kept:])
        seconds = time.perf_counter() - t0
        llm.eval(llm.tokenize(turn["answer"].encode(), add_bos=False, special=False))
        turns.append({"prompt_tokens": len(tokens), "reused_tokens": kept, "prompt_seconds": seconds})
    print(json.dumps({
        "model": "llama-cpp-python",
        "file": path,
        "threads": threads,
        "turns": turns,
        "prompt_seconds": sum(t["prompt_seconds"] for t in turns),
    }, indent=2))


def main() -> None:
    path = sys.argv[1]
    if "--session" in sys.argv[2:]:
        session(path)
        return
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    max_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    texts = json.load(sys.stdin)
    prompt = (
        f"<|im_start|>system\n{texts['system']}<|im_end|>\n"
        f"<|im_start|>user\n{texts['user']}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    threads = os.cpu_count() or 1
    started = time.perf_counter()
    llm = Llama(model_path=path, n_ctx=4096, n_batch=512, n_threads=threads, n_threads_batch=threads, verbose=False)
    load = time.perf_counter() - started
    tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    prompt_rates, generation_rates, generated = [], [], []
    for _ in range(runs):
        llm.reset()
        t0 = time.perf_counter()
        stream = llm.generate(tokens, top_k=1, temp=0.0, reset=True)
        first = next(stream)
        t1 = time.perf_counter()
        count = 0
        token = first
        # Stop where bugloop stops: at any end-of-generation token (<|im_end|> as well as EOS).
        while not llama_cpp.llama_vocab_is_eog(llm._model.vocab, token) and count < max_tokens:
            count += 1
            token = next(stream)
        t2 = time.perf_counter()
        prompt_rates.append(len(tokens) / (t1 - t0))
        generation_rates.append(count / (t2 - t1) if t2 > t1 else 0.0)
        generated.append(count)
    print(json.dumps({
        "model": "llama-cpp-python",
        "file": path,
        "load_seconds": load,
        "runs": runs,
        "prompt_tokens": len(tokens),
        "generated_tokens": generated,
        "prompt_tokens_per_second": statistics.median(prompt_rates),
        "generation_tokens_per_second": statistics.median(generation_rates),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "threads": threads,
    }, indent=2))


if __name__ == "__main__":
    main()
