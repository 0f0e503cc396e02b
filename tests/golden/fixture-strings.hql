// vault: vault
// A String value prints raw, a Data leaf quoted (reference 8.1).
// expected: [Bearer tokens, "todo", ConceptCard, RelationCard]
[
    [[bearer-tokens]].title,
    [[bearer-tokens]].metadata.status,
    [[bearer-tokens]].kind,
    [[oauth-defines-bearer]].kind,
]
