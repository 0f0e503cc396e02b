"""The step reference in docs/steps.md, generated from the registry.

    python -m hql.docs > docs/steps.md

A test fails when the file and the registry disagree.
"""

from __future__ import annotations

from hql.builtins import availability
from hql.registry import StepSpec, registry


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


def step_reference() -> str:
    reg = registry()
    lines = [
        "# Step reference",
        "",
        "Generated from the registry by `python -m hql.docs`; do not edit by hand.",
        "Steps are written after `|`; `import NAME` makes an extension's steps available.",
        "",
    ]
    for extension in reg.extensions.values():
        lines += [
            f"## `{extension.name}` ({availability(extension, None)})",
            "",
            _sentence(extension.summary),
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
            direct = (
                f"; may also be called directly, as `{spec.name}(xs, …)`" if spec.direct else ""
            )
            lines += [f"Example: `{spec.example}` ({purity}{direct}).", ""]
    lines += ["## Functions", ""]
    for function in reg.functions.values():
        lines += [
            f"### `{function.name}`",
            "",
            _sentence(function.summary),
            "",
            "```text",
            function.signature,
            "```",
            "",
        ]
        lines += [f"Example: `{function.example}`.", ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(step_reference(), end="")
