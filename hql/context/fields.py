"""The recall fields of a card (memory.md §2): read by hql.vault.recall, named here too.

Reading front matter is the vault's part, so ranking (hql.search) can weigh the fields
without importing the context layer.
"""

from hql.vault.recall import (
    DEFAULT_KEYS,
    FIELD_NAMES,
    PHRASE_FIELDS,
    PRIORITIES,
    STATUSES,
    RecallFields,
    field_mapping,
    recall_fields,
)

__all__ = [
    "DEFAULT_KEYS",
    "FIELD_NAMES",
    "PHRASE_FIELDS",
    "PRIORITIES",
    "STATUSES",
    "RecallFields",
    "field_mapping",
    "recall_fields",
]
