"""The semantic index: schema v1 SQLite files, their reader, their producer and the embedders.

Layers, lower never importing higher: `schema` (tables, vector blobs) and
`config` (hql.toml) → `embedders` → `reader` (ranking) and `producer` (build,
verify, inspect) → `commands` (the `hql index` CLI). numpy and the models are
imported lazily, so importing this package costs nothing at check time.
"""

from hql.index.errors import EmbedderError, EmbedderUnavailable, SemanticIndexError

__all__ = ["EmbedderError", "EmbedderUnavailable", "SemanticIndexError"]
