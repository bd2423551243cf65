"""The local BM25 index: build (atomically, with a manifest), load, search.

The scoring is Okapi BM25's (k1=1.5, b=0.75, term frequency saturated as
``tf·(k1+1) / (tf + k1·(1-b+b·|d|/avgdl))``) with Lucene's idf
``log(1 + (N-df+0.5)/(df+0.5))``, positive for every term a passage holds (an
index of one passage retrieves it), with bm25s's tokenizer and weights (see
:mod:`crag_cli.index.bm25`).

On disk an index is a directory::

    manifest.json       format version, tokenizer settings, counts, source files
                        (each with its size, modification time, sha256 and passages)
    passages.jsonl      one Passage per line, in index order (the files' order)
    passages.offsets.npy  where each line starts (int64 byte offsets, one more than passages)
    bm25/               the term matrix: vocabulary, term counts and BM25 weights

A loaded index keeps neither the passages nor the term matrix in memory: the
matrix is memory-mapped and a passage is read from ``passages.jsonl`` when a
search returns it, so a process's memory does not grow with the collection.

A rebuild is incremental: the passages and term counts of files whose size and
sha256 are unchanged are taken from the old index, only new and changed files
are read and tokenized, and the BM25 weights are recomputed; the result is the
index a full build would write (``--force`` does a full build).

Modules: ``format`` (the files and the manifest, the tokenizer, the retriever's
types), ``build`` (building and recovering), ``store`` (the passages), ``load``
(one generation of an index, whole, while a rebuild replaces it), ``search``
(:class:`BM25Index`).
"""

import importlib

_WHERE = {  # each public name and its module, imported when first asked for: a light submodule (``dense``'s names
    # for the settings) does not pull in the builder, BM25 and NumPy
    "BuildReport": "build",
    "build_index": "build",
    "check_index_target": "build",
    "INDEX_ENTRIES": "format",
    "MANIFEST": "format",
    "PASSAGE_OFFSETS": "format",
    "PASSAGES": "format",
    "Hit": "format",
    "IndexUnusableError": "format",
    "NoIndex": "format",
    "Retriever": "format",
    "TokenizerSettings": "format",
    "corrupt": "format",
    "is_crag_index": "format",
    "read_manifest": "format",
    "recover_index": "format",
    "BM25Index": "search",
    "Retrieval": "search",
    "fuse": "search",
    "top_k": "search",
    "PassageStore": "store",
    "write_passages": "store",
    "RETRIEVALS": "dense",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)


__all__ = [
    "BM25Index",
    "BuildReport",
    "Hit",
    "INDEX_ENTRIES",
    "IndexUnusableError",
    "MANIFEST",
    "NoIndex",
    "PASSAGES",
    "PASSAGE_OFFSETS",
    "PassageStore",
    "RETRIEVALS",
    "Retrieval",
    "fuse",
    "Retriever",
    "TokenizerSettings",
    "build_index",
    "check_index_target",
    "corrupt",
    "is_crag_index",
    "read_manifest",
    "recover_index",
    "top_k",
    "write_passages",
]
