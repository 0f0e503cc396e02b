"""`hql builtins`: every registered extension and its steps, from the registry."""

from __future__ import annotations

from hql.registry import Extension, registry
from hql.vault import Vault


def availability(extension: Extension, vault: Vault | None) -> str:
    if extension.always:
        return "always available"
    prelude = vault.config.prelude if vault is not None else True
    if extension.prelude and prelude:
        return "prelude"
    if vault is not None and extension.name in vault.config.imports:
        return "imported by this vault"
    return "imported where it is used"


def describe(vault: Vault | None) -> str:
    reg = registry()
    lines: list[str] = []
    for extension in reg.extensions.values():
        lines.append(f"{extension.name} {extension.version} ({availability(extension, vault)})")
        for spec in extension.steps.values():
            lines += [f"  {spec.name}", f"    {spec.signature}", f"    {spec.summary}"]
    lines.append("functions")
    for function in reg.functions.values():
        lines += [f"  {function.name}", f"    {function.signature}", f"    {function.summary}"]
    return "\n".join(lines)
