"""Reading text: what both the pipelines (``evalkit.nodes``) and the judges (``evalkit.judges``) need.

What it is for: a node and the judge that scores its answer must read text the same way, yet
the system under test must never run the evaluator's rules (a change to the judge would then
move the numbers it judges). So the shared reading lives here, below both: neither imports
the other (docs/concepts.md, Layers; tests/test_layers.py checks it).

- :mod:`~evalkit.text.tokenize`: the BM25 and content-term tokenisers (jieba for Chinese, stemming);
- :mod:`~evalkit.text.sentences`: sentence spans (what chunking, compression and extractive answers cut at);
- :mod:`~evalkit.text.claims`: an answer split into sentences (claims) and clauses;
- :mod:`~evalkit.text.citations`: citation markers (``[fin-004]``, ``[1]``, ``【1】``) and what they point to;
- :mod:`~evalkit.text.values`: the checkable facts of a text (numbers, dates, units, codes, names),
  read with :mod:`~evalkit.text.quantities`, :mod:`~evalkit.text.dates`, :mod:`~evalkit.text.numerals`,
  :mod:`~evalkit.text.shares`, :mod:`~evalkit.text.units` and :mod:`~evalkit.text.names`; Chinese names
  from jieba's part-of-speech tags (:mod:`~evalkit.text.postag`: an exact, faster decoder);
- :mod:`~evalkit.text.lexicon`: content terms, stop words and negation cues;
- :mod:`~evalkit.text.abstention`, :mod:`~evalkit.text.refusal_rules`, :mod:`~evalkit.text.error_replies`:
  refusals and error messages sent as answers;
- :mod:`~evalkit.text.wordlists`: the word-list files in ``evalkit/text/data/`` they all read;
- :mod:`~evalkit.text.memo`: analyses memoised by text, one switch for them and one way to clear every cache.
"""
