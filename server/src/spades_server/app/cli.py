"""``spades-server``: run the table service until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import structlog

from spades_server.app import config, integrity
from spades_server.app.server import SpadesServer, StartupError, check_ports_free, serve
from spades_server.domain import tokens
from spades_server.eventlog.base import LogDamaged
from spades_server.ops import logs, metrics
from spades_server.ops.settings import Settings


def scripts_folder() -> tuple[str, str]:
    """How to name this installation's commands from the current folder, and a hint for PATH.

    A fresh shell in the checkout has no ``.venv/bin`` on PATH: ``spades-bot`` alone is "command
    not found". So the banner names ``.venv/bin/spades-bot`` unless PATH already finds that very
    file; ``("", "")`` then.
    """
    folder = Path(sys.executable).parent  # a venv's bin/ (sys.executable is not resolved)
    found = shutil.which("spades-bot")
    if found is not None and Path(found).parent.resolve() == folder.resolve():
        return "", ""
    shown = os.path.relpath(folder)
    if shown.startswith(".."):
        shown = str(folder)
    activate = folder / "activate"
    hint = f". {os.path.join(shown, 'activate')}" if activate.exists() else f"PATH={shown}:$PATH"
    return shown + os.sep, hint


def banner(
    address: str,
    database: str,
    durability: str,
    metrics_url: str,
    grpcurl: str = "-plaintext",
    web_url: str = "off",
    scripts: tuple[str, str] = ("", ""),
    admin: bool = False,
) -> str:
    """What the operator sees once the server is listening (the first line names the address).

    Every command in it runs as printed from a shell in the current folder; ``scripts`` is
    :func:`scripts_folder`'s (prefix, PATH hint).
    """
    prefix, hint = scripts
    admin_line = (
        f"on (the operator's calls: {prefix}spades-admin list, with SPADES_OPERATOR_TOKEN set)"
        if admin
        else f"off (turn it on: SPADES_OPERATOR_TOKEN=$(openssl rand -hex 32) {prefix}spades-server"
        " ..., or make run with it set)"
    )
    on_path = f"  on PATH:        {hint}   (then plain spades-bot, spades-arena, ...)\n"
    return (
        f"Spades table service listening on {address}"
        f" (event log {database}, durability {durability})\n"
        f"  web:            {web_url}\n"
        f"  metrics:        {metrics_url}\n"
        f"  admin:          {admin_line}\n"
        f"  connect a bot:  {prefix}spades-bot --server {address} --quick-match --bot random\n"
        f"  list tables:    {prefix}spades-tables --server {address}\n"
        f"  watch a table:  {prefix}spades-watch TABLE_ID --server {address}\n"
        + (on_path if hint else "")
        + "  stop:           Ctrl-C or SIGTERM (streams close with UNAVAILABLE: clients resume)"
    )


def named_ports(settings: Settings) -> set[int]:
    """The ports the settings name for gRPC and the web port (not 0, not off): bound after the
    metrics' port, so a metrics port picked by the kernel must not be one of them."""
    addresses = (settings.listen, settings.web)
    return {
        port
        for address in addresses
        if address != "off" and (port := config.split_address(address)[1]) != 0
    }


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] in integrity.COMMANDS:  # spades-server check|backup ...
        return integrity.main(arguments)
    settings = config.from_args(argv)
    logs.configure(settings.log_format, settings.log_level)
    log = structlog.get_logger("spades_server.app.cli")
    warning = tokens.operator_token_warning(settings.operator_token)
    if settings.operator_token and warning is not None:
        log.warning(warning)
    metrics_url, stop_metrics = "off", None
    try:
        check_ports_free(settings)
        if not settings.postgres_dsn:
            folder = Path(settings.database).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StartupError(
                    f"cannot create the database folder {folder}: {error.strerror or error}"
                ) from None
        if settings.metrics != "off":
            try:
                metrics_url, stop_metrics = metrics.serve(
                    *config.split_address(settings.metrics), avoid=named_ports(settings)
                )
            except OSError as error:
                raise StartupError(
                    f"cannot serve metrics on {settings.metrics}: {error.strerror or error}"
                    " (choose another with --metrics, or --metrics off)"
                ) from None
            log.info("metrics serving", url=metrics_url)

        def ready(server: SpadesServer) -> None:
            host = settings.listen.rpartition(":")[0] or "127.0.0.1"
            address = f"{host}:{server.port}"
            tls = settings.tls_cert
            grpcurl = f"-cacert {tls}" if tls else "-plaintext"
            log_name = "PostgreSQL" if settings.postgres_dsn else settings.database
            shown = banner(
                address,
                log_name,
                settings.durability,
                metrics_url,
                grpcurl,
                server.web_url or "off",
                scripts_folder(),
                admin=bool(settings.operator_token),
            )
            print(shown, flush=True)

        asyncio.run(serve(settings, ready=ready))
    except (StartupError, OSError, LogDamaged) as error:
        print(f"spades-server: {error}", file=sys.stderr)
        return 2
    finally:
        if stop_metrics is not None:
            stop_metrics()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
