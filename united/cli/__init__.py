"""The ``united`` command line: thin over the core and the runtime, one module per command.

Exit codes: 0 success; 2 bad input (one ``field.path: message`` line per error on stderr,
never a traceback); 1 an unexpected internal failure. The JSON shapes printed with
``-o json`` are a public interface documented in ``docs/reference/cli.md``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from united import __version__
from united.api.field import ManifestError
from united.cli import costs, demo, install, join, plan, render, run, samples, spread, validate
from united.cli.output import EXIT_OK, fail


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result: int = args.func(args)
        return result
    except ManifestError as e:
        return fail(e.errors, json_out=getattr(args, "output", "") == "json")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="united", description="UnitedDeployment controller and tools.")
    p.add_argument("--version", action="version", version=f"united {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate.register(sub)
    plan.register(sub)
    render.register(sub)
    spread.register_admit(sub)
    costs.add_parser(sub)
    run.register(sub)
    join.add_parser(sub)
    demo.register(sub)
    install.register(sub)
    samples.register(sub)
    return p
