"""mkdocs hook: the op reference, generated at build time from `spade-memory schema`.

`spade-memory schema` prints the JSON Schema of every request and reply of every
service. This hook runs it once per build and adds one page per service (and an index
page) under ``protocol/reference/``, so the reference can never drift from the code;
the nav entry of ``protocol/reference/index.md`` becomes a section listing them all, so
a new service needs no change here. Nothing is written into ``docs/``: the pages exist
only in the build.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

Schema = dict[str, Any]

REFERENCE = "protocol/reference"
TITLES = {
    "base-memory": "Base memory agent",
    "interaction-memory": "Interaction memory agent",
    "beads-sync": "Beads sync agent",
}


_schema: Schema | None = None


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Run the command once, and list one reference page per service in the nav."""
    global _schema
    _schema = _load_schema()
    pages: list[Any] = [f"{REFERENCE}/index.md"]
    pages += [{TITLES.get(name, name): f"{REFERENCE}/{name}.md"} for name in _schema["services"]]
    if not _fill_nav(config.nav or [], f"{REFERENCE}/index.md", pages):
        raise RuntimeError(f"the nav has no entry for {REFERENCE}/index.md")
    return config


def _fill_nav(nav: list[Any], index: str, pages: list[Any]) -> bool:
    """Replace the nav entry ``{title: index}`` by the section ``{title: pages}``."""
    for item in nav:
        if not isinstance(item, dict):
            continue
        for title, value in item.items():
            if value == index:
                item[title] = pages
                return True
            if isinstance(value, list) and _fill_nav(value, index, pages):
                return True
    return False


def on_files(files: Files, config: MkDocsConfig) -> Files:
    schema = _schema if _schema is not None else _load_schema()
    services: dict[str, Schema] = schema["services"]
    pages = {f"{REFERENCE}/index.md": _index_page(schema)}
    for name, service in services.items():
        pages[f"{REFERENCE}/{name}.md"] = _service_page(name, service)
    for uri, text in pages.items():
        files.append(File.generated(config, uri, content=text))
    return files


def _load_schema() -> Schema:
    """Run the command beside this interpreter (the project's environment), else on PATH."""
    beside = Path(sys.executable).parent / "spade-memory"
    command = str(beside) if beside.exists() else shutil.which("spade-memory")
    if command is None:
        raise RuntimeError(
            "the op reference needs `spade-memory schema`: install the package "
            '(python -m pip install -e ".[dev]") in the environment that runs mkdocs'
        )
    out = subprocess.run([command, "schema"], check=True, capture_output=True, text=True)
    loaded: Schema = json.loads(out.stdout)
    return loaded


# ---- pages ---------------------------------------------------------------------------


def _index_page(schema: Schema) -> str:
    envelope: Schema = schema["envelope"]
    meta = envelope["metadata"]
    lines = [
        "# Op reference",
        "",
        "Generated at build time from `spade-memory schema`, which prints the JSON Schema",
        "of every request and reply of every service; run it yourself for the whole",
        "machine-readable document. The [protocol overview](../index.md) explains how",
        "requests travel; this part lists what each agent answers.",
        "",
        "## The envelope",
        "",
        "| part | value |",
        "|---|---|",
        f'| stanza | `<message type="{envelope["message_type"]}">` (or `normal`) |',
        f"| metadata form (XEP-0004) | titled `{envelope['metadata_form_title']}` |",
        f"| `performative` | {_codes(meta['performative'])} |",
        f"| `ontology` | `{meta['ontology']}` |",
        f"| `language` | `{meta['language']}` |",
        f"| thread | {_text(envelope['thread'])} |",
        f"| plain peers | {_text(envelope['plain_peers'])} |",
        f"| failure conditions | {_codes(envelope['conditions'])} |",
        "",
        "## Services",
        "",
        "| service | ops |",
        "|---|---|",
    ]
    for name, service in schema["services"].items():
        ops = ", ".join(
            f"[`{op}`]({name}.md#{_op_anchor(op)})" for op in sorted(_op_models(service))
        )
        lines.append(f"| [{TITLES.get(name, name)}]({name}.md) | {ops} |")
    lines += [
        "",
        "## Failures",
        "",
        "A `failure` or `refuse` reply carries this body:",
        "",
        *_fields_table(schema["failure"]),
        "",
        "## Batches",
        "",
        "Any memory agent takes several of its ops in one message. The request:",
        "",
        *_fields_table(schema["batch"]["request"]),
        "",
        "The reply, one item per op in the same order:",
        "",
        *_fields_table(schema["batch"]["reply"]),
        "",
    ]
    item = schema["batch"]["reply"].get("$defs", {}).get("BatchItem")
    if item is not None:
        lines += ["Each item (`BatchItem`):", "", *_fields_table(item), ""]
    return "\n".join(lines)


def _service_page(name: str, service: Schema) -> str:
    ops = _op_models(service)
    replies: dict[str, Schema] = service["replies"]
    types = _named_types(service, set(ops.values()))
    known = set(types)
    title = TITLES.get(name, name)
    lines = [
        f"# {title}",
        "",
        f"The ops the `{name}` service answers, generated from `spade-memory schema`.",
        "Every request is a JSON object whose `op` names the operation; fields not listed",
        "are refused (`bad-request`), and `owner`, where it appears, may only repeat the",
        "sender's bare JID. Types of replies are listed [at the end](#types).",
        "",
    ]
    for op in sorted(ops):
        model = service["request"]["$defs"][ops[op]]
        lines += [f"## `{op}` {{ #{_op_anchor(op)} }}", ""]
        if model.get("description"):
            lines += [_text(model["description"]), ""]
        lines += _fields_table(model, known, skip=frozenset({"op", "owner"}))
        reply = replies.get(op)
        if reply is not None:
            lines += ["", f"**Reply:** {_type_link(reply['title'], known)}"]
        lines += [
            "",
            f'??? note "JSON Schema of `{op}`"',
            "",
            "    ```json",
            *("    " + row for row in json.dumps(model, indent=2).splitlines()),
            "    ```",
            "",
        ]
    lines += ["## Types", ""]
    for type_name in sorted(types):
        model = types[type_name]
        lines += [f"### `{type_name}` {{ #{_type_anchor(type_name)} }}", ""]
        if model.get("description"):
            lines += [_text(model["description"]), ""]
        if "properties" in model:
            lines += _fields_table(model, known)
        else:
            lines.append(_type(model, known))
        lines.append("")
    return "\n".join(lines)


# ---- schema walking ------------------------------------------------------------------


def _op_models(service: Schema) -> dict[str, str]:
    """Op name -> the name of its request model in the request's $defs."""
    mapping: dict[str, str] = service["request"]["discriminator"]["mapping"]
    return {op: ref.rsplit("/", 1)[-1] for op, ref in mapping.items()}


def _named_types(service: Schema, request_models: set[str]) -> dict[str, Schema]:
    """Every model a reply names: the replies, and what requests and replies refer to."""
    types: dict[str, Schema] = {}
    for name, model in service["request"]["$defs"].items():
        if name not in request_models:
            types[name] = model
    for reply in service["replies"].values():
        types.setdefault(reply["title"], {k: v for k, v in reply.items() if k != "$defs"})
        for name, model in reply.get("$defs", {}).items():
            types.setdefault(name, model)
    return types


def _fields_table(
    model: Schema, known: set[str] | None = None, skip: frozenset[str] = frozenset()
) -> list[str]:
    known = known or set()
    properties: dict[str, Schema] = model.get("properties", {})
    required = set(model.get("required", []))
    rows = [
        "| field | type | required / default | description |",
        "|---|---|---|---|",
    ]
    for field, spec in properties.items():
        if field in skip:
            continue
        need = "**required**" if field in required else _default(spec)
        rows.append(
            f"| `{field}` | {_type(spec, known)} | {need} | {_text(spec.get('description', ''))} |"
        )
    if len(rows) == 2:
        return ["No fields."]
    return rows


def _default(spec: Schema) -> str:
    if "default" not in spec:
        return "optional"
    return f"`{json.dumps(spec['default'])}`"


def _type(spec: Schema, known: set[str]) -> str:
    if "$ref" in spec:
        return _type_link(spec["$ref"].rsplit("/", 1)[-1], known)
    if "anyOf" in spec:
        options = [s for s in spec["anyOf"] if s.get("type") != "null"]
        text = " or ".join(_type(s, known) for s in options)
        return text + (" or null" if len(options) < len(spec["anyOf"]) else "")
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return " or ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    kind = spec.get("type", "any")
    if kind == "array":
        text = "array of " + _type(spec.get("items", {}), known)
    elif kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        text = "object of " + _type(spec["additionalProperties"], known)
    else:
        text = str(kind)
        if "format" in spec:
            text += f" ({spec['format']})"
    bounds = _bounds(spec)
    return f"{text} ({bounds})" if bounds else text


def _bounds(spec: Schema) -> str:
    parts = [
        _range(spec, "minLength", "maxLength", "characters"),
        _range(spec, "minItems", "maxItems", "items"),
        _range(spec, "minProperties", "maxProperties", "keys"),
    ]
    for key, word in (
        ("minimum", "≥ {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "≤ {}"),
        ("exclusiveMaximum", "< {}"),
    ):
        if key in spec:
            parts.append(word.format(spec[key]))
    if "pattern" in spec:
        parts.append(f"matching `{spec['pattern']}`")
    return ", ".join(part for part in parts if part)


def _range(spec: Schema, low: str, high: str, unit: str) -> str:
    if low in spec and high in spec:
        return f"{spec[low]} to {spec[high]} {unit}"
    if high in spec:
        return f"at most {spec[high]} {unit}"
    if low in spec:
        return f"at least {spec[low]} {unit}"
    return ""


# ---- text ----------------------------------------------------------------------------


def _type_link(name: str, known: set[str]) -> str:
    if name in known:
        return f"[`{name}`](#{_type_anchor(name)})"
    return f"`{name}`"


def _op_anchor(op: str) -> str:
    return "op-" + op.replace("_", "-")


def _type_anchor(name: str) -> str:
    return "type-" + name.lower()


def _codes(values: list[str]) -> str:
    return ", ".join(f"`{v}`" for v in values)


_CODE = re.compile(r"(``?)(.+?)\1")


def _text(text: str) -> str:
    """One table cell or paragraph: docstring text, HTML-escaped outside code spans."""
    flat = " ".join(text.split())
    out, end = [], 0
    for match in _CODE.finditer(flat):
        out.append(html.escape(flat[end : match.start()], quote=False))
        out.append(f"`{match.group(2)}`")
        end = match.end()
    out.append(html.escape(flat[end:], quote=False))
    return "".join(out).replace("|", "\\|")
