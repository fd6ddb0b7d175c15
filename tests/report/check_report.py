#!/usr/bin/env python3
"""Checks one run report and trace: schema, invariants, expected advice.

    check_report.py SCHEMA.json REPORT.json TRACE.json "ADVICE_ID ..."
"""
from __future__ import annotations

import json
import sys
from typing import Any


def structural(schema: dict[str, Any], value: Any, where: str, defs: dict[str, Any]) -> None:
    """A small subset of JSON Schema (types, required, additionalProperties, enum, const,
    items, $ref), for machines without the jsonschema package."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    if "const" in schema and value != schema["const"]:
        raise ValueError(f"{where}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{where}: {value!r} not in {schema['enum']}")
    t = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "number": (int, float), "integer": int}
    if t and not isinstance(value, types[t]):
        raise ValueError(f"{where}: expected {t}, got {type(value).__name__}")
    if t in ("integer", "number") and "minimum" in schema and value < schema["minimum"]:
        raise ValueError(f"{where}: {value} < {schema['minimum']}")
    if t == "object":
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                raise ValueError(f"{where}: missing {k}")
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(props)
            if extra:
                raise ValueError(f"{where}: unexpected {sorted(extra)}")
        for k, v in value.items():
            if k in props:
                structural(props[k], v, f"{where}.{k}", defs)
    if t == "array" and "items" in schema:
        for i, v in enumerate(value):
            structural(schema["items"], v, f"{where}[{i}]", defs)


def main() -> int:
    schema_path, report_path, trace_path, expected = sys.argv[1:5]
    schema = json.load(open(schema_path))
    report = json.load(open(report_path))
    try:
        import jsonschema  # type: ignore[import-untyped]

        jsonschema.validate(report, schema)
        how = "jsonschema"
    except ImportError:
        structural(schema, report, "report", schema.get("$defs", {}))
        how = "structural"
    phases = sum(report["phases"].values())
    if phases != report["total_ns"]:
        raise SystemExit(f"phases add up to {phases}, total is {report['total_ns']}")
    if not report["launches"] or report["phases"]["dpu_kernel_ns"] <= 0:
        raise SystemExit("no launch in the report")
    got = sorted(a["id"] for a in report["advice"])
    want = sorted(expected.split())
    if got != want:
        raise SystemExit(f"advice {got}, expected {want}")
    trace = json.load(open(trace_path))
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    if names.get(0) != "host" or not any(n.startswith("rank ") for n in names.values()):
        raise SystemExit(f"trace tracks: {names}")
    spans = [e for e in events if e["ph"] == "X"]
    if not any(e["tid"] > 0 and e["cat"] == "dpu_kernel" for e in spans):
        raise SystemExit("no kernel span on a rank track")
    for e in spans:
        if e["dur"] < 0 or e["ts"] < 0:
            raise SystemExit(f"bad span {e}")
    print(f"{how}; advice {got or 'none'}; {len(spans)} spans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
