"""Turning program text into a syntax tree: tokens, layout, grammar, tree."""
