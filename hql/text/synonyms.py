"""Built-in synonym groups: price, opening hours and ID in six languages.

Each group is a list of words or short phrases; the first entry names the group.
The analyser folds them like any text, so accents and case do not matter here.
They are small on purpose: a vault adds its own groups with `[search] synonyms`.
"""

from __future__ import annotations

PRICE = [
    "price", "prices", "cost", "costs", "fee", "fees", "how much", "pricing",
    "preço", "preços", "custo", "custa", "quanto custa", "valor", "mensalidade",
    "precio", "precios", "coste", "costo", "cuesta", "cuánto cuesta", "tarifa", "tarifas",
    "prix", "coût", "coûte", "combien coûte", "tarif",
    "preis", "preise", "kosten", "kostet", "gebühr", "gebühren",
    "prezzo", "prezzi", "quanto costa", "tariffa", "tariffe",
]  # fmt: skip

OPENING_HOURS = [
    "opening hours", "hours", "open", "opens", "opening times", "business hours", "closing time",
    "horário", "horários", "horário de funcionamento", "funcionamento", "abre", "aberto",
    "horario", "horarios", "horario de atención", "abierto", "cierra",
    "horaires", "horaire", "heures d'ouverture", "ouvert", "ouverture", "ferme",
    "öffnungszeiten", "geöffnet", "öffnet", "sprechzeiten",
    "orari", "orario", "orario di apertura", "aperto", "apertura", "chiude",
]  # fmt: skip

IDENTIFICATION = [
    "id", "identifier", "identification", "identity document", "id card",
    "identidade", "documento de identidade", "identificação", "rg", "cpf",
    "identificación", "documento de identidad", "dni", "cédula",
    "identifiant", "pièce d'identité", "carte d'identité", "identification",
    "ausweis", "personalausweis", "kennung", "identifikation",
    "identificativo", "carta d'identità", "documento d'identità", "identificazione",
]  # fmt: skip

BUILTIN_GROUPS: tuple[list[str], ...] = (PRICE, OPENING_HOURS, IDENTIFICATION)
