"""The one line ``svc-frames`` prints on Ctrl-C: what the command did and how to go on."""

from __future__ import annotations

import argparse


def interrupted_line(args: argparse.Namespace, exc: KeyboardInterrupt) -> str:
    """The one line a Ctrl-C prints: for push, what the run did (its partial report) and
    that pushing again sends only the rest; for an export, that its output was left as
    it was (the export writes nothing until its last page: saved/layout.py Staging)."""
    report = getattr(exc, "report", None)
    command = getattr(args, "command", None)
    if command == "push" and report is not None:
        status = report.table["status"]
        applied = int((status == "applied").sum())
        rest = len(status) - applied
        unknown = int((status == "unknown").sum())
        lost = (f" ({unknown} sent without an answer: the next push re-reads them)"
                if unknown else "")
        return (f"svc-frames push: interrupted: {applied} of {len(status)} records applied, "
                f"{rest} left{lost}; run "
                f"`svc-frames push {args.path}` again to send only the rest")
    if command == "push":
        return (f"svc-frames push: interrupted; run `svc-frames push {args.path} --dry-run` "
                "to see what is left to send")
    if command == "export" and getattr(args, "out", None):
        return (f"svc-frames export: interrupted; {args.out} was left as it was (an export "
                "writes nothing until it has every page): run the same command again")
    if command == "restore":
        journal = getattr(args, "journal", None)
        return ("svc-frames restore: interrupted; " + (
            f"run the same command again (with --journal {journal}) to send only the rest"
            if journal else "without --journal it cannot be resumed: the records it "
            "created would be created again; look at the object before restoring again"))
    return "svc-frames" + (f" {command}" if command else "") + ": interrupted"
