"""Word-based retrieval: the hashbag (`lexical`), BM25F (`bm25`), rank fusion and `relevant`.

Kept empty of imports on purpose: the modules here pull in numpy and ICU, and the
interpreter imports them only when a retrieval step actually runs.
"""
