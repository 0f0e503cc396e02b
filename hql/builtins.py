"""`hql builtins`: every registered extension and its steps, from the registry."""

from __future__ import annotations

from hql import messages
from hql.registry import Extension, installed
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
    reg = installed()
    lines: list[str] = []
    for extension in reg.extensions.values():
        origin = f", package {extension.package}" if extension.package else ""
        lines.append(
            f"{extension.name} {extension.version} ({availability(extension, vault)}{origin})"
        )
        for spec in extension.steps.values():
            lines += [f"  {spec.name}", f"    {spec.signature}", f"    {spec.summary}"]
        for function in extension.functions.values():
            lines += [f"  {function.name}", f"    {function.signature}", f"    {function.summary}"]
    lines.append("functions")
    for function in reg.functions.values():
        lines += [f"  {function.name}", f"    {function.signature}", f"    {function.summary}"]
    if reg.load_failures:
        lines.append(messages.ext_builtins_failed())
        lines += [f"  {name}: {reason}" for name, reason in sorted(reg.load_failures.items())]
    return "\n".join(lines)


def describe_extension(name: str, vault: Vault | None) -> str:
    """One extension's reference, as docs/steps.md shows a shipped one; HostError if unknown."""
    from hql.api import HostError
    from hql.docs import extension_section

    reg = installed()
    extension = reg.extensions.get(name)
    if extension is None:
        failure = reg.load_failures.get(name)
        if failure:
            raise HostError(messages.ext_failed_to_load(name, failure))
        raise HostError(messages.ext_builtins_unknown(name, sorted(reg.extensions)))
    return "\n".join(extension_section(extension, availability(extension, vault))).rstrip()
