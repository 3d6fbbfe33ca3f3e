"""The one typed settings object, read from ``MAILNODE_*`` environment variables and an optional TOML file.

Precedence (highest first): explicit keyword arguments (the CLI's flags), ``MAILNODE_*`` environment
variables, ``<data_dir>/mailnode.toml`` (or ``MAILNODE_CONFIG_FILE``), the defaults below. Every option
is documented in ``docs/configuration.md``. Settings are passed into constructors, never read from a
global.

A name the node does not know stops start-up (``load_settings``, ``E_SETTING_UNKNOWN``) instead of being
ignored: a mistyped ``MAILNODE_*`` environment variable or TOML key would otherwise leave its setting at
the default without a word. Known are the settings below, ``MAILNODE_CONFIG_FILE``, and the variables the
CLI's client commands read (``CLIENT_VARIABLES``); names under ``MAILNODE_TEST_`` (``TEST_PREFIX``) belong
to the test suite and CI and are never read by the node.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from mailnode import budgets
from mailnode.errors import MailnodeError, invalid

#: The prefix of every setting's environment variable.
ENV_PREFIX = "MAILNODE_"
#: Reserved for the test suite and CI (``MAILNODE_TEST_DB``, ``MAILNODE_TEST_PG_URL``,
#: ``MAILNODE_TEST_REQUIRE_PG``): never a setting, never refused.
TEST_PREFIX = "MAILNODE_TEST_"
#: ``MAILNODE_*`` variables that are not settings but are read by name: the settings file's path
#: (``load_settings``) and the node a client command talks to (``mailnode butler``: ``--url``, ``--token``).
CLIENT_VARIABLES: tuple[str, ...] = ("MAILNODE_CONFIG_FILE", "MAILNODE_TOKEN", "MAILNODE_URL")


def _hostport(value: str, field: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not (0 <= int(port) <= 65535):
        raise invalid(
            "E_SETTING_MALFORMED",
            f"{field} {value!r} is not HOST:PORT.",
            "Listen addresses are a host and a port joined by a colon.",
            f"Set {field} like 127.0.0.1:8025.",
            setting=field,
            value=value,
        )
    return host.strip("[]"), int(port)


class Settings(BaseSettings):
    """Node settings. Field names map to ``MAILNODE_<NAME>`` environment variables."""

    # ``extra="ignore"`` here because the refusal of unknown names is ``load_settings``'s, which knows the
    # reserved test prefix and the client variables; pydantic-settings' own ``forbid`` would refuse those too.
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    #: Where the node keeps its database (by default), evidence store and outbox.
    data_dir: Path = Field(default=Path("./.mailnode"))
    #: SQLAlchemy URL; empty means SQLite at ``<data_dir>/mailnode.db``.
    database_url: str = ""
    #: HTTP API listen address, HOST:PORT.
    http: str = "127.0.0.1:8025"
    #: SMTP listener address, HOST:PORT.
    smtp: str = "127.0.0.1:2525"
    #: Outbound transport: file (default, writes .eml into the outbox), smtp, or resend.
    transport: Literal["file", "smtp", "resend"] = "file"
    #: Smarthost for the smtp transport, HOST:PORT.
    smtp_relay: str = "127.0.0.1:25"
    #: TLS for the smtp transport.
    smtp_tls: Literal["opportunistic", "required", "implicit", "none"] = "opportunistic"
    #: Optional smarthost credentials (never logged).
    smtp_username: str = ""
    smtp_password: str = Field(default="", repr=False)
    #: Resend API base URL and key (the local emulator in tests).
    resend_base_url: str = "https://api.resend.com"
    resend_api_key: str = Field(default="", repr=False)
    #: Resend webhook signing secret (``whsec_...``).
    resend_webhook_secret: str = Field(default="", repr=False)
    #: The bounce domain for VERP return paths; empty means the organisation's first domain.
    bounce_domain: str = ""
    #: authserv-ids whose Authentication-Results headers are trusted (comma-separated in the env).
    trusted_authserv_ids: Annotated[list[str], NoDecode] = Field(default_factory=list)
    #: Statement pot per Butler run.
    butler_run_pot: int = budgets.BUTLER_RUN_POT_STATEMENTS
    #: Seconds a Butler run waits for a person to release its send before it ends ``stopped/release_timed_out``.
    butler_release_timeout_seconds: float = budgets.APPROVAL_SEND_EXPIRY_SECONDS
    #: Seconds between dispatch sweeps (DBOS schedule).
    dispatch_interval_seconds: int = budgets.DISPATCH_SWEEP_INTERVAL_SECONDS
    #: Seconds between scans for unmaterialised receipts.
    materialise_scan_interval_seconds: int = budgets.MATERIALISE_SCAN_INTERVAL_SECONDS
    #: DBOS executor id of this process; empty means one derived from host and pid (DBOS trap 3).
    executor_id: str = ""
    #: DBOS system database URL; empty means SQLite in the data directory, or the node's PostgreSQL.
    dbos_system_database_url: str = ""
    #: Fault injection for crash tests: seconds each materialisation waits before writing (0 in production).
    fault_materialise_delay_seconds: float = 0.0
    #: Fault injection for quarantine tests: each materialisation raises MemoryError before parsing (False in
    #: production); the receipt is then quarantined (``ingress.quarantine``).
    fault_materialise_memory_error: bool = False
    #: The address system mail (verification codes, notices) is sealed from: an address of a node mailbox.
    #: Empty means the organisation's oldest mailbox address (spec/transactional.md §1).
    system_sender: str = ""
    #: The node's secret for keyed hashes (verification codes). Empty: read ``<data_dir>/node_secret``,
    #: generated there with 32 random bytes on first use (``directory.secret``).
    node_secret: str = Field(default="", repr=False)
    #: Emails per UTC day the provider plan allows; 0 means no daily cap (paid plans).
    provider_daily_limit: int = budgets.PROVIDER_DAILY_LIMIT_DEFAULT
    #: The day's reading at which realtime mail stops (the reserve below the limit).
    provider_realtime_ceiling: int = budgets.PROVIDER_REALTIME_CEILING_DEFAULT
    #: The day's reading at which correspondence stops.
    provider_correspondence_ceiling: int = budgets.PROVIDER_CORRESPONDENCE_CEILING_DEFAULT
    #: Seconds between notify sweeper passes (DBOS schedule): 1..59 dividing 60, or whole minutes dividing 60.
    sweeper_interval_seconds: int = budgets.SWEEPER_INTERVAL_SECONDS
    #: Deferrable mail not handed over within this many seconds of sealing is given up (``withheld/gave_up``).
    sweeper_give_up_age_seconds: int = budgets.SWEEPER_GIVE_UP_AGE_SECONDS
    #: Hand-overs a deferrable send may try before it is given up.
    sweeper_max_attempts: int = budgets.SWEEPER_MAX_ATTEMPTS
    #: Seconds a sweeper or dispatch claim is leased for before another worker may recover it.
    sweeper_lease_seconds: int = budgets.DISPATCH_LEASE_SECONDS
    #: Seconds between notice sweeps (DBOS schedule): the values ``sweeper_interval_seconds`` accepts.
    notice_sweep_interval_seconds: int = budgets.NOTICE_SWEEP_INTERVAL_SECONDS
    #: Hosts webhook endpoints may reach although they resolve to a loopback, private, link-local or otherwise
    #: non-public address (comma-separated in the env; exact host names or IP literals, compared lower-cased).
    #: Empty by default: such addresses are refused (server-side request forgery; ``app_events.rules``).
    webhook_allow_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    #: Seconds between webhook passes (DBOS schedule): the values ``sweeper_interval_seconds`` accepts.
    webhook_pass_interval_seconds: int = budgets.WEBHOOK_PASS_INTERVAL_SECONDS
    #: Delay before each webhook retry, seconds (comma-separated in the env); after the last the endpoint is
    #: disabled. The default backs off exponentially over a day.
    webhook_retry_schedule_seconds: Annotated[list[int], NoDecode] = Field(
        default_factory=lambda: list(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS))
    #: How the log is written (``mailnode.logs``): ``text`` for a person, ``json`` for one object per line.
    log_format: Literal["text", "json"] = "text"
    #: Lowest level at which third-party libraries (DBOS, Alembic, uvicorn, aiosmtpd, flufl.bounce) are logged.
    log_libraries: Literal["debug", "info", "warning", "error"] = "warning"

    @field_validator("webhook_allow_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [p.strip().lower() for p in v.split(",") if p.strip()]
        return v

    @field_validator("webhook_retry_schedule_seconds", mode="before")
    @classmethod
    def _split_schedule(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [int(p) for p in v.split(",") if p.strip()]
        return v

    @field_validator("trusted_authserv_ids", mode="before")
    @classmethod
    def _split_ids(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [p.strip().lower() for p in v.split(",") if p.strip()]
        return v

    @property
    def http_hostport(self) -> tuple[str, int]:
        """(host, port) of the HTTP listener; raises ``E_SETTING_MALFORMED``."""
        return _hostport(self.http, "http")

    @property
    def smtp_hostport(self) -> tuple[str, int]:
        """(host, port) of the SMTP listener; raises ``E_SETTING_MALFORMED``."""
        return _hostport(self.smtp, "smtp")

    @property
    def relay_hostport(self) -> tuple[str, int]:
        """(host, port) of the smarthost; raises ``E_SETTING_MALFORMED``."""
        return _hostport(self.smtp_relay, "smtp_relay")

    @property
    def resolved_database_url(self) -> str:
        """The database URL in force: the setting, else SQLite at ``<data_dir>/mailnode.db``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'mailnode.db').resolve()}"

    @property
    def is_postgres(self) -> bool:
        """True when the node's database is PostgreSQL."""
        return self.resolved_database_url.startswith("postgresql")

    @property
    def evidence_dir(self) -> Path:
        """Content-addressed blobs: raw inbound MIME, sealed bodies, submitted bytes."""
        return self.data_dir / "evidence"

    @property
    def outbox_dir(self) -> Path:
        """Where the ``file`` transport writes one ``.eml`` per recipient."""
        return self.data_dir / "outbox"


def known_variables() -> list[str]:
    """Every ``MAILNODE_*`` environment variable the node knows, sorted: one per setting, and
    ``CLIENT_VARIABLES``."""
    return sorted({f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields} | set(CLIENT_VARIABLES))


def unknown_variables(names: Iterable[str]) -> list[str]:
    """The environment variable ``names`` under ``MAILNODE_`` (compared case-insensitively, as the settings
    read them) that are neither known (``known_variables``) nor under ``TEST_PREFIX``, sorted. Pure."""
    known = set(known_variables())
    return sorted(n for n in names
                  if n.upper().startswith(ENV_PREFIX) and not n.upper().startswith(TEST_PREFIX)
                  and n.upper() not in known)


def unknown_keys(keys: Iterable[str]) -> list[str]:
    """The settings file's top-level ``keys`` that name no setting, sorted. Pure."""
    return sorted(k for k in keys if k not in Settings.model_fields)


def unknown_setting(unknown: list[str], known: list[str], source: str) -> MailnodeError:
    """``E_SETTING_UNKNOWN`` (422) for the ``unknown`` names found in ``source`` (the environment or a
    settings file's path), each with its closest known name first (``difflib``). Pure."""
    suggestions = {name: difflib.get_close_matches(name.upper() if source == "the environment" else name,
                                                   known, n=3, cutoff=0.6) for name in unknown}
    closest = [f"{name} (did you mean {' or '.join(found)}?)" if found else name
               for name, found in suggestions.items()]
    return invalid(
        "E_SETTING_UNKNOWN",
        f"mailnode does not know the setting{'s' if len(unknown) > 1 else ''} {', '.join(closest)} in {source}.",
        "A name the node does not read would silently leave its setting at the default, so start-up stops "
        f"instead. Names under {TEST_PREFIX} are the test suite's and are ignored.",
        "Correct or remove the name; the known ones are: " + ", ".join(known)
        + ". Every setting is described in docs/configuration.md.",
        unknown=unknown, suggestions=suggestions, known=known, source=source,
    )


def load_settings(data_dir: Path | str | None = None, **overrides: Any) -> Settings:
    """Build the settings: TOML file under the data directory, then env, then ``overrides``.

    ``data_dir`` defaults to ``MAILNODE_DATA_DIR``, else ``./.mailnode``. Raises ``E_SETTING_UNKNOWN``
    (422) for a ``MAILNODE_*`` environment variable or a TOML key that names no setting (see the module
    docstring), and ``E_SETTING_MALFORMED`` (422) when the TOML file does not parse or a value has the
    wrong shape.
    """
    unknown_env = unknown_variables(os.environ)
    if unknown_env:
        raise unknown_setting(unknown_env, known_variables(), "the environment")
    base = Path(data_dir) if data_dir is not None else Path(os.environ.get("MAILNODE_DATA_DIR", "./.mailnode"))
    file_values: dict[str, Any] = {}
    path = Path(os.environ.get("MAILNODE_CONFIG_FILE", base / "mailnode.toml"))
    if path.is_file():
        try:
            file_values = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise invalid(
                "E_SETTING_MALFORMED",
                f"{path} is not valid TOML.",
                str(exc),
                f"Fix or remove {path}.",
                path=str(path),
            ) from exc
        unknown_file = unknown_keys(file_values)
        if unknown_file:
            raise unknown_setting(unknown_file, sorted(Settings.model_fields), str(path))
    try:
        env_values = Settings().model_dump(exclude_unset=True)
        merged = {**file_values, **env_values, **{k: v for k, v in overrides.items() if v is not None}}
        merged["data_dir"] = base
        return Settings(**merged)
    except (SettingsError, ValidationError) as exc:
        raise invalid(
            "E_SETTING_MALFORMED",
            "A setting has a value of the wrong shape.",
            str(exc).splitlines()[0] if isinstance(exc, SettingsError) else str(exc),
            f"Correct the MAILNODE_* variable or {path}; every setting is listed in docs/configuration.md.",
            path=str(path),
        ) from exc
