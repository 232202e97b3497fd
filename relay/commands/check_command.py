"""`failover-relay check` and `failover-relay test`: their flags (the schema source is the same for both), and which
checker they run with; what they do is relay/commands/check/."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from relay.commands.conventions import Subcommands, add_command, refuse

if TYPE_CHECKING:
    from relay.commands.check.manifest_check import Checker


def add_parser(commands: Subcommands) -> None:
    check = add_command(
        commands, "check", help="what kubectl apply will say about manifests; exit 1 on a deny, 2 on bad input"
    )
    check.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="YAML files or directories; - reads the standard input"
    )
    check.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only denials, errors and the summary (no allowed, skipped or warning lines)",
    )
    _add_checker_flags(check)
    check.set_defaults(run=run_check)

    test = add_command(
        commands,
        "test",
        help="run the test cases of a directory (failover-relay-test.yaml): expected verdicts, warnings and patches",
    )
    test.add_argument("paths", nargs="+", type=Path, metavar="DIR", help="directories holding failover-relay-test.yaml")
    _add_checker_flags(test)
    test.set_defaults(run=run_test)


def _add_checker_flags(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--crds",
        type=Path,
        metavar="DIR",
        help="Karmada CRDs to check against, e.g. charts/karmada/_crds/bases of a Karmada checkout "
        "(default: Karmada v1.19's, bundled)",
    )
    source.add_argument(
        "--server",
        action="store_true",
        help="ask the Karmada apiserver of --kubeconfig: a server-side apply with dryRun=All",
    )
    source.add_argument("--rules-only", action="store_true", help="the failover rules only, no CRD schema")
    parser.add_argument("--kubeconfig", type=Path, help="with --server (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="namespace of objects that name none, as kubectl -n (default: default)",
    )


def run_check(args: argparse.Namespace) -> int:
    from relay.commands.check.manifest_check import run_objects

    return _with_checker(
        args, lambda check: run_objects(args.paths, check, sys.stdout, sys.stderr, args.quiet, namespace=args.namespace)
    )


def run_test(args: argparse.Namespace) -> int:
    from relay.commands.check.testcases import run_test_dirs

    return _with_checker(args, lambda check: run_test_dirs(args.paths, check, sys.stdout, sys.stderr))


def _with_checker(args: argparse.Namespace, go: Callable[[Checker], int]) -> int:
    """Pick the schema source, then `go` with the checker; a source or a server that cannot be used is exit 2."""
    from relay.commands.check.manifest_check import local_checker, rules_only_note, server_checker
    from relay.commands.check.schemas import SchemaSourceError, bundled, from_directory
    from relay.commands.check.server_check import ServerCheckError
    from relay.kube_requests import Unreachable

    try:
        if args.server:
            check = server_checker(args.kubeconfig, args.namespace)
        elif args.rules_only:
            print(rules_only_note(args.command), file=sys.stderr)
            check = local_checker(None, args.namespace)
        else:
            check = local_checker(from_directory(args.crds) if args.crds else bundled(), args.namespace)
        return go(check)
    except (SchemaSourceError, ServerCheckError, Unreachable) as error:
        return refuse(error)
