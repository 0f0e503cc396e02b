"""HQL's types (era C): the lattice, Data membership, joins and resolution of written types."""

from __future__ import annotations

from hql.record import record


@record
class Type:
    name: str
    args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}<{', '.join(str(arg) for arg in self.args)}>"

    @property
    def arg(self) -> Type:
        return self.args[0]


def atom(name: str) -> Type:
    return Type(name)


NEVER = atom("Never")
UNIT = atom("Unit")
SCALAR = atom("Scalar")
BOOL = atom("Bool")
INT = atom("Int")
FLOAT = atom("Float")
STRING = atom("String")
DATE = atom("Date")
DATA = atom("Data")
DOC = atom("Doc")
CARD = atom("Card")
CONCEPT_CARD = atom("ConceptCard")
RELATION_CARD = atom("RelationCard")
EDGE = atom("Edge")
GRAPH = atom("Graph")
PRESENTATION = atom("Presentation")
CONTEXT = atom("Context")  # a context block (hql.context.block)
ORDERING = atom("Ordering")
ORDERABLE = atom("Orderable")
TASK = atom("Task")
CONCEPT = atom("Concept")  # what `recall` ranks (hql.values.Concept)


def option(inner: Type) -> Type:
    return inner if inner.name == "Option" else Type("Option", (inner,))


def list_of(inner: Type) -> Type:
    return Type("List", (inner,))


def set_of(inner: Type) -> Type:
    return Type("Set", (inner,))


def seq_of(inner: Type) -> Type:
    return Type("Seq", (inner,))


def hit_of(inner: Type) -> Type:
    return Type("Hit", (inner,))


def ranking_of(inner: Type) -> Type:
    return Type("Ranking", (inner,))


def map_of(kind: str, key: Type, value: Type) -> Type:
    return Type(kind, (key, value))


# Atoms and their declared parents (reference section 7.2).
ATOM_PARENTS: dict[str, tuple[str, ...]] = {
    "Never": (),
    "Unit": (),
    "Scalar": (),
    "Orderable": (),
    "Bool": ("Scalar",),
    "Int": ("Scalar", "Orderable"),
    "Float": ("Scalar", "Orderable"),
    "String": ("Scalar", "Orderable"),
    "Date": ("Scalar", "Orderable"),
    "Data": (),
    "Doc": ("Orderable",),
    "Card": ("Doc",),
    "ConceptCard": ("Card",),
    "RelationCard": ("Card",),
    "Edge": (),
    "Graph": (),
    "Presentation": (),
    "Context": (),
    "Ordering": (),
    "Task": (),
    "Concept": (),
}
ABSTRACT_ATOMS = {"Scalar", "Orderable", "Never"}
GENERIC_ARITY = {
    "Option": 1,
    "Hit": 1,
    "Ranking": 1,
    "Collection": 1,
    "Seq": 1,
    "List": 1,
    "Set": 1,
    "Map": 2,
    "OrderedMap": 2,
    "SortedMap": 2,
    "Group": 2,  # Group<K, T>: `key: K` and `items: List<T>` (HQL-0004)
}
ALIASES = {"Link": "Edge", "Relation": "Edge", "KnowledgeGraph": "Graph", "HmdGraph": "Graph"}
SEQUENCES = {"List", "Seq"}
COLLECTIONS = {"List", "Seq", "Set", "Collection"}
MAPS = ("Map", "OrderedMap", "SortedMap")
CARD_FAMILY = {"Card", "ConceptCard", "RelationCard"}
# Which generic type constructors are (covariantly) below which.
GENERIC_PARENTS = {
    "List": ("Seq", "Collection"),
    "Seq": ("Collection",),
    "Set": ("Collection",),
    "SortedMap": ("OrderedMap", "Map"),
    "OrderedMap": ("Map",),
}


def atom_ancestors(name: str, parents: dict[str, tuple[str, ...]] | None = None) -> set[str]:
    table = parents if parents is not None else ATOM_PARENTS
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        stack.extend(table.get(current, ()))
    return seen


def is_data(t: Type) -> bool:
    """Membership of the `Data` union: scalars, sequences of Data, maps from String to Data."""
    if t.name in ("Data", "Never") or (not t.args and "Scalar" in atom_ancestors(t.name)):
        return True
    if t.name in SEQUENCES:
        return is_data(t.arg)
    if t.name in MAPS:
        return t.args[0] == STRING and is_data(t.args[1])
    return False


def is_subtype(a: Type, b: Type) -> bool:
    if a in (b, NEVER):
        return True
    if b == DATA:
        return is_data(a)
    if b.name == "Option":
        return is_subtype(a.arg if a.name == "Option" else a, b.arg)
    if a.name == "Option":
        return False
    if b == ORDERABLE and a.name == "Hit":
        return True
    if not a.args and not b.args:
        return b.name in atom_ancestors(a.name)
    if a.name == "Ranking":
        if b.name == "Ranking":
            return is_subtype(a.arg, b.arg)
        return b.name in ("Seq", "Collection") and is_subtype(hit_of(a.arg), b.arg)
    if a.args and b.args and (a.name == b.name or b.name in GENERIC_PARENTS.get(a.name, ())):
        return len(a.args) == len(b.args) and all(
            is_subtype(x, y) for x, y in zip(a.args, b.args, strict=True)
        )
    return False


def is_orderable(t: Type) -> bool:
    return t != NEVER and is_subtype(t, ORDERABLE)


def join(a: Type, b: Type) -> Type | None:
    """The common type of two collection elements, or None when they have none."""
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    if a.name in CARD_FAMILY and b.name in CARD_FAMILY:
        return CARD
    if a.name == b.name and a.args and len(a.args) == len(b.args):
        args = [join(x, y) for x, y in zip(a.args, b.args, strict=True)]
        if all(arg is not None for arg in args):
            return Type(a.name, tuple(arg for arg in args if arg is not None))
    if is_data(a) and is_data(b):
        return DATA
    return None


def element_type(t: Type) -> Type | None:
    """What a step sees one at a time when this type flows into it; None if not a collection."""
    if t.name in COLLECTIONS:
        return t.arg
    if t.name == "Ranking":
        return hit_of(t.arg)
    if t.name == "Option":
        return element_type(t.arg) or t.arg
    if t in (DATA, NEVER):
        return t
    return None


def is_document(t: Type) -> bool:
    """A Doc or a card (optional or not): what ranking and graph steps take."""
    t = strip_option(t)
    return t == DOC or t.name in CARD_FAMILY


def strip_option(t: Type) -> Type:
    return t.arg if t.name == "Option" else t


def known_type_names() -> list[str]:
    return sorted(set(ATOM_PARENTS) | set(GENERIC_ARITY) | set(ALIASES))
