"""The step reference in docs/steps.md, generated from the registry.

    python -m hql.docs > docs/steps.md

A test fails when the file and the registry disagree.
"""

from __future__ import annotations

from hql.builtins import availability
from hql.registry import Extension, FunctionSpec, StepSpec, registry


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _param_rows(spec: StepSpec) -> list[str]:
    if not spec.params:
        return []
    rows = ["| parameter | type | default | written |", "| --- | --- | --- | --- |"]
    for param in spec.params:
        default = (
            "required"
            if param.required
            else ("none" if param.default is None else repr(param.default))
        )
        if param.positional and param.named:
            written = "positional or named"
        elif param.positional:
            written = "positional only"
        else:
            written = "named only"
        rows.append(f"| `{param.name}` | `{param.type}` | {default} | {written} |")
    return rows + [""]


def _function_section(function: FunctionSpec, level: str = "###") -> list[str]:
    lines = [
        f"{level} `{function.name}`",
        "",
        _sentence(function.summary),
        "",
        "```text",
        function.signature,
        "```",
        "",
    ]
    return lines + ([f"Example: `{function.example}`.", ""] if function.example else [])


def extension_section(extension: Extension, availability_text: str) -> list[str]:
    """One extension's part of the reference: its steps, then its own functions."""
    origin = f" Provided by the package `{extension.package}`." if extension.package else ""
    lines = [
        f"## `{extension.name}` ({availability_text})",
        "",
        _sentence(extension.summary) + origin,
        "",
    ]
    for spec in extension.steps.values():
        lines += [
            f"### `{spec.name}`",
            "",
            _sentence(spec.summary),
            "",
            "```text",
            spec.signature,
            "```",
            "",
        ]
        lines += _param_rows(spec)
        purity = "pure" if spec.pure else "effectful"
        direct = f"; may also be called directly, as `{spec.name}(xs, …)`" if spec.direct else ""
        limit = "; a following `take(k)` may be pushed into it" if "limit" in spec.absorbs else ""
        example = f"Example: `{spec.example}` " if spec.example else ""
        lines += [f"{example}({purity}{direct}{limit}).", ""]
    for function in extension.functions.values():
        lines += _function_section(function)
    return lines


def step_reference() -> str:
    """The shipped extensions only: installed packages document themselves (`hql builtins
    --extension NAME`)."""
    reg = registry()
    lines = [
        "# Step reference",
        "",
        "Generated from the registry by `python -m hql.docs`; do not edit by hand.",
        "Steps are written after `|`; `import NAME` makes an extension's steps available.",
        "",
    ]
    for extension in reg.extensions.values():
        if extension.package is None:
            lines += extension_section(extension, availability(extension, None))
    lines += ["## Functions", ""]
    for function in reg.functions.values():
        lines += _function_section(function)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(step_reference(), end="")
