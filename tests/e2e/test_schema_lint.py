"""The committed SDL passes graphql-schema-linter with its default rules (every type,
field, argument, input field and enum value described; lists sorted; Relay connection
rules), and the description table of schema/descriptions.py names only what exists and
is applied (a description beside a definition would shadow an entry)."""

from __future__ import annotations

import json
import subprocess

from app.print_schema import INTROSPECTION_FILE, SCHEMA_FILE
from schema.descriptions import DESCRIPTIONS
from tests.support.npm import npm_folder

LINTER = ["graphql-schema-linter@3.0.1", "graphql@16.11.0"]


def test_graphql_schema_linter_default_rules_find_nothing():
    folder = npm_folder("graphql-schema-linter", LINTER)
    run = subprocess.run(
        [
            str(folder / "node_modules" / ".bin" / "graphql-schema-linter"),
            "--format",
            "json",
            str(SCHEMA_FILE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = json.loads(run.stdout)["errors"]
    print("graphql-schema-linter:", len(errors), "errors")
    assert errors == [], [e["message"] for e in errors[:20]]
    assert run.returncode == 0, run.stderr


def _described() -> dict[str, str | None]:
    """Every description of the introspection by DESCRIPTIONS's key shapes."""
    out: dict[str, str | None] = {}
    for t in json.loads(INTROSPECTION_FILE.read_text())["__schema"]["types"]:
        name = t["name"]
        out[name] = t["description"]
        for f in (t.get("fields") or []) + (t.get("inputFields") or []):
            out[f"{name}.{f['name']}"] = f["description"]
            for a in f.get("args") or ():
                out[f"{name}.{f['name']}({a['name']})"] = a["description"]
        for v in t.get("enumValues") or ():
            out[f"{name}.{v['name']}"] = v["description"]
    return out


def test_every_description_entry_is_used():
    described = _described()
    unknown = sorted(k for k in DESCRIPTIONS if k not in described)
    assert not unknown, f"no such type, field, argument or value: {unknown}"
    shadowed = sorted(k for k, v in DESCRIPTIONS.items() if described[k] != v)
    assert not shadowed, f"described beside the definition already (drop the entry): {shadowed}"
