"""Write what the table of rule variations (spades/engine/variations.py) implies outside Python.

Two outputs, each rewritten whole from the table: the web form's controls as a TypeScript module
(server/web/src/variations.generated.ts, which lobby.ts builds its form from) and the list of
variations in docs/rules.md (between two marker lines, the rest of the page untouched). ``make
web`` runs it before the vite build; tests/test_generated_variations.py fails when a committed
output differs from what this writes.

The proto field names of the table are resolved here against the generated descriptors
(spades.v1.rules_pb2), so a name that is not in protos/ fails the build, and the TypeScript
names (``targetScore``, ``PlayDirection.COUNTER_CLOCKWISE``) are protobuf-es's for them.

Usage: python tools/gen_variations.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from spades.engine.variations import VARIATIONS, Checkbox, NumberInput, Variation
from spades.v1 import rules_pb2

REPO_ROOT = Path(__file__).resolve().parent.parent
TYPESCRIPT = REPO_ROOT / "server" / "web" / "src" / "variations.generated.ts"
DOCS = REPO_ROOT / "docs" / "rules.md"
DOCS_START = "<!-- variations: start (written by tools/gen_variations.py from the table) -->"
DOCS_END = "<!-- variations: end -->"


def _path(message: Descriptor, dotted: str) -> list[FieldDescriptor]:
    """The fields a dotted path (``clock.turn_millis``) goes through, from ``message``."""
    fields: list[FieldDescriptor] = []
    for name in dotted.split("."):
        if name not in message.fields_by_name:
            raise KeyError(f"{message.full_name} has no field {name!r} (path {dotted!r})")
        field = message.fields_by_name[name]
        fields.append(field)
        if field.message_type is not None:
            message = field.message_type
    return fields


def _enum_member(field: FieldDescriptor, value_name: str) -> str:
    """``PlayDirection.COUNTER_CLOCKWISE`` for ``PLAY_DIRECTION_COUNTER_CLOCKWISE``."""
    enum = field.enum_type
    if enum is None or value_name not in enum.values_by_name:
        raise KeyError(f"{value_name!r} is not a value of RuleSet.{field.name}")
    prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"
    return f"{enum.name}.{value_name.removeprefix(prefix)}"


def _assignment(variation: Variation) -> tuple[str, set[str]]:
    """The TypeScript body of a control's ``apply``, and the enums it names."""
    control = variation.control
    assert control is not None
    fields = _path(rules_pb2.RuleSet.DESCRIPTOR, control.proto_field)
    target = "rules." + ".".join(field.json_name for field in fields)
    # Every message on the way may be unset in protobuf-es: write only into one that is there.
    guards = [
        "rules." + ".".join(field.json_name for field in fields[: index + 1])
        for index, field in enumerate(fields[:-1])
    ]
    enums: set[str] = set()
    if isinstance(control, Checkbox):
        checked = control.checked
        if isinstance(checked, str):
            value = _enum_member(fields[-1], checked)
            enums.add(value.split(".")[0])
        else:
            value = json.dumps(checked)
        condition = " && ".join(["input.checked", *guards])
        return f"if ({condition}) {target} = {value};", enums
    number = "Number(input.value)" + (f" * {control.scale}" if control.scale != 1 else "")
    statement = f"{target} = {number};"
    if guards:
        statement = f"if ({' && '.join(guards)}) {statement}"
    return statement, enums


def _attributes(control: Checkbox | NumberInput) -> dict[str, str]:
    if isinstance(control, Checkbox):
        return {}
    attributes = {
        "value": str(control.value),
        "min": str(control.minimum),
        "max": str(control.maximum),
    }
    if control.step is not None:
        attributes["step"] = str(control.step)
    return attributes


def _form_order(variation: Variation) -> int:
    # Beside the table's name first (the match's length), then the tick boxes, then the numbers.
    control = variation.control
    if isinstance(control, NumberInput) and control.beside_name:
        return 0
    return 1 if isinstance(control, Checkbox) else 2


def typescript() -> str:
    """The web form's controls, one per variation the form offers, as a TypeScript module."""
    offered = sorted((v for v in VARIATIONS if v.control is not None), key=_form_order)
    entries: list[str] = []
    enums: set[str] = set()
    for variation in offered:
        control = variation.control
        assert control is not None
        body, named = _assignment(variation)
        enums |= named
        kind = "checkbox" if isinstance(control, Checkbox) else "number"
        beside = isinstance(control, NumberInput) and control.beside_name
        attributes = ", ".join(f"{k}: {json.dumps(v)}" for k, v in _attributes(control).items())
        entries.append(
            "  {\n"
            f"    variation: {json.dumps(variation.name)},\n"
            f"    kind: {json.dumps(kind)},\n"
            f"    name: {json.dumps(control.id)},\n"
            f"    label: {json.dumps(control.label, ensure_ascii=False)},\n"
            f"    besideName: {json.dumps(beside)},\n"
            f"    attributes: {{{(' ' + attributes + ' ') if attributes else ''}}},\n"
            f"    apply: (rules, input) => {{ {body} }},\n"
            "  },\n"
        )
    imports = ", ".join([*sorted(enums), "type RuleSet"])
    return (
        "// Generated by tools/gen_variations.py from the table of rule variations\n"
        "// (client_sdk/src/spades/engine/variations.py): do not edit; `make web` writes it\n"
        "// again.\n"
        "\n"
        f'import {{ {imports} }} from "@spades/client";\n'
        "\n"
        "/** The web form's control for one rule variation, and what it sets in the RuleSet. */\n"
        "export interface VariationControl {\n"
        "  /** The variation's name in the table. */\n"
        "  readonly variation: string;\n"
        '  readonly kind: "checkbox" | "number";\n'
        "  /** The input's name. */\n"
        "  readonly name: string;\n"
        "  readonly label: string;\n"
        "  /** Shown beside the table's name (the match's length) rather than among the rules. */\n"
        "  readonly besideName: boolean;\n"
        "  /** A number input's value, min, max and step, as its attributes. */\n"
        "  readonly attributes: Readonly<Record<string, string>>;\n"
        "  /** Writes what the input says into a rule set that starts as the default game. */\n"
        "  readonly apply: (rules: RuleSet, input: HTMLInputElement) => void;\n"
        "}\n"
        "\n"
        "/** Beside the table's name first, then the tick boxes, then the numbers; each in the\n"
        " * table's order. */\n"
        "export const VARIATION_CONTROLS: readonly VariationControl[] = [\n"
        f"{''.join(entries)}"
        "];\n"
    )


def _code(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names) if names else "—"


def _manifest(variation: Variation) -> str:
    if not variation.manifest:
        return "any manifest"
    if variation.manifest[0].startswith("RULE_OPTION_"):
        return _code(list(variation.manifest))
    return "the manifest's " + _code(list(variation.manifest))


def _form(variation: Variation) -> str:
    control = variation.control
    if control is None:
        return "—"
    kind = "tick box" if isinstance(control, Checkbox) else "number"
    return f"{kind} “{control.label}”"


def docs_section() -> str:
    """docs/rules.md's list of variations: a Markdown table, one line per row of the table."""
    lines = [
        DOCS_START,
        "| Variation | `Rules` | `spades.v1.RuleSet` | Badge | Manifest | Web form | What it does"
        " |",
        "|---|---|---|---|---|---|---|",
    ]
    for variation in VARIATIONS:
        lines.append(
            "| "
            + " | ".join(
                [
                    variation.name,
                    _code([field.rules for field in variation.fields]),
                    _code([field.proto for field in variation.fields]),
                    f"“{variation.badge}”" if variation.badge else "none",
                    _manifest(variation),
                    _form(variation),
                    variation.description,
                ]
            )
            + " |"
        )
    lines.append(DOCS_END)
    return "\n".join(lines) + "\n"


def with_docs_section(page: str) -> str:
    """``page`` (docs/rules.md) with its list of variations written again from the table."""
    start, end = page.find(DOCS_START), page.find(DOCS_END)
    if start < 0 or end < start:
        raise ValueError(f"docs/rules.md has no {DOCS_START!r} ... {DOCS_END!r} section")
    return page[:start] + docs_section() + page[end + len(DOCS_END) + 1 :]


def generate() -> list[Path]:
    """Write both outputs in the repository; the files written."""
    TYPESCRIPT.write_text(typescript(), encoding="utf-8")
    DOCS.write_text(with_docs_section(DOCS.read_text(encoding="utf-8")), encoding="utf-8")
    return [TYPESCRIPT, DOCS]


def main() -> int:
    for path in generate():
        print(path.relative_to(REPO_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
