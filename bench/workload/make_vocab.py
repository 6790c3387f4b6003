#!/usr/bin/env python3
"""Regenerates data/english_by_rank.txt, the workload's English vocabulary by frequency rank.

Debian ships no Brown-corpus frequency list. It does ship python3-zxcvbn, whose
frequency_lists.py holds two ranked English lists: the 30,000 most frequent words of
English Wikipedia and 19,160 words of a US TV-and-film-script frequency list. zxcvbn kept
each word only in the list where it ranks best, so the two lists are disjoint; merging them
by rank (Wikipedia first on equal rank) gives one ranked list of written and spoken English.
Entries that are not one word under feedplane's tokenizer (u.s., don't, km/h) are dropped.

usage: make_vocab.py [path/to/zxcvbn/frequency_lists.py] > data/english_by_rank.txt
"""
import importlib.util
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "/usr/lib/python3/dist-packages/zxcvbn/frequency_lists.py"
spec = importlib.util.spec_from_file_location("frequency_lists", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
lists = [mod.FREQUENCY_LISTS["english_wikipedia"], mod.FREQUENCY_LISTS["us_tv_and_film"]]
ranked = sorted((rank, which, w) for which, lst in enumerate(lists) for rank, w in enumerate(lst))
seen = set()
for _, _, w in ranked:
    if re.fullmatch(r"[a-z0-9]+", w) and w not in seen:
        seen.add(w)
        print(w)
