"""``spades-server``: run the table service until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import structlog

from spades_server import config, logs, metrics
from spades_server.server import SpadesServer, serve


def banner(
    address: str,
    database: str,
    durability: str,
    metrics_url: str,
    grpcurl: str = "-plaintext",
    web_url: str = "off",
) -> str:
    """What the operator sees once the server is listening (the first line names the address)."""
    return (
        f"Spades table service listening on {address}"
        f" (event log {database}, durability {durability})\n"
        f"  web:            {web_url}\n"
        f"  metrics:        {metrics_url}\n"
        f"  connect a bot:  spades-bot --server {address} --quick-match --bot random\n"
        f'  watch a table:  grpcurl {grpcurl} -d \'{{"table_id": "TABLE_ID"}}\' {address}'
        " spades.v1.PlayService/Watch\n"
        f"  list tables:    grpcurl {grpcurl} {address} spades.v1.LobbyService/ListTables\n"
        "  stop:           Ctrl-C or SIGTERM (streams close with UNAVAILABLE: clients resume)"
    )


def main(argv: list[str] | None = None) -> int:
    settings = config.from_args(argv)
    logs.configure(settings.log_format, settings.log_level)
    log = structlog.get_logger("spades_server.cli")
    if not settings.postgres_dsn:
        Path(settings.database).parent.mkdir(parents=True, exist_ok=True)
    metrics_url, stop_metrics = "off", None
    try:
        if settings.metrics != "off":
            metrics_url, stop_metrics = metrics.serve(*config.split_address(settings.metrics))
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
            )
            print(shown, flush=True)

        asyncio.run(serve(settings, ready=ready))
    except OSError as error:
        print(f"spades-server: {error}", file=sys.stderr)
        return 2
    finally:
        if stop_metrics is not None:
            stop_metrics()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
