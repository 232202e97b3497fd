"""The `failover-relay` command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from relay.settings import SettingsError, check_settings, load_settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="failover-relay",
        description="Admission webhook and reconcile loop for Karmada application failover of stateful workloads.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the TLS admission server")
    serve.add_argument("--config", type=Path, help="YAML config file (flags override it)")
    serve.add_argument("--host", help="listen address (default 127.0.0.1, 0.0.0.0 in a cluster)")
    serve.add_argument("--port", type=int, help="listen port (default 9443)")
    serve.add_argument("--cert-dir", type=Path,
                       help="directory of ca.crt, tls.crt, tls.key; generated when absent "
                            "(default $XDG_STATE_HOME/failover-relay/certs)")
    serve.add_argument("--service-name", help="in-cluster Service name, added to the certificate's names")
    serve.add_argument("--namespace", help="in-cluster namespace of that Service")
    serve.add_argument("--max-body-bytes", type=int, help="largest AdmissionReview accepted (default 3 MiB)")
    serve.add_argument("--log-format", choices=("auto", "json", "console"),
                       help="auto: console on a terminal, JSON otherwise")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"))

    check = commands.add_parser("check", help="validate policy manifests offline; exit 1 on a deny, 2 on bad files")
    check.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="YAML files or directories")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check":
        from relay.check import run_check

        return run_check(args.paths, sys.stdout, sys.stderr)
    if args.command == "serve":
        return _serve(args)
    raise AssertionError(f"unhandled command {args.command}")


def _serve(args: argparse.Namespace) -> int:
    from certs.store import CertificateError
    from relay.logs import configure_logging
    from relay.serve import serve

    try:
        settings = load_settings(args.config).with_overrides(
            host=args.host, port=args.port, cert_dir=args.cert_dir, service_name=args.service_name,
            namespace=args.namespace, max_body_bytes=args.max_body_bytes, log_format=args.log_format,
            log_level=args.log_level)
        check_settings(settings)
    except SettingsError as error:
        print(f"failover-relay: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_format, settings.log_level)
    try:
        asyncio.run(serve(settings))
    except CertificateError as error:
        print(f"failover-relay: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the port is taken, the address does not exist
        print(f"failover-relay: cannot listen on {settings.host}:{settings.port}: {error.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
