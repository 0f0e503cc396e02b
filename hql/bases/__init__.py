"""Obsidian Bases (`.base` files) read as HQL programs and run (`hql base`, docs/bases.md)."""
