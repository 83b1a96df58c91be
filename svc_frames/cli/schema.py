"""``svc-frames schema``: the application's objects, fields and kinds, scenes and views."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import add_credentials, client_from_args, run_client_command


def add_schema(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "schema", help="print the application's objects, fields and kinds, scenes and views")
    p.add_argument("--json", action="store_true", help="the schema as JSON")
    add_credentials(p)
    return p


def cmd_schema(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        schema = client.schema()
        if not schema:
            print(f"error: {client.base_url} shows no schema for application "
                  f"{client.app_id!r}: the service hides it (loads then infer kinds from the "
                  "records), or that is not the service's address or the application's id: "
                  "check SVC_BASE_URL (--base-url) and SVC_APP_ID (--app-id)", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(dict(schema), indent=1))
            return 0
        print(f"{schema.name or '?'} (id {schema.get('id', client.app_id)}, "
              f"timezone {schema.timezone_name or '?'})")
        for okey in schema.object_keys():
            print(f"\n{okey}  {schema.object_name(okey)}")
            for f in schema.object_fields(okey) or ():
                extra = ""
                if f.kind == "multiple_choice" and f.format.get("type"):
                    extra = f" ({f.format['type']})"
                if f.relationship:
                    rel = f.relationship
                    extra = f" -> {rel.get('object')} ({rel.get('has', '?')})"
                print(f"  {f.key:<10} {f.kind:<16} {f.name}{extra}")
        if schema.scenes():
            print("\nscenes and views")
        for skey, sc in schema.scenes():
            login = " (login)" if sc.get("authenticated") else ""
            print(f"  {skey}{login} {sc.get('name', '')}")
            for vkey, v in schema.scene_views(skey):
                print(f"    {vkey:<9} {v.get('type', '?'):<9} "
                      f"{schema.view_object(skey, vkey):<10} {v.get('name', '')}")
        return 0

    return run_client_command(run)
