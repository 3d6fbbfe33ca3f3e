"""What the Limits and health page says about a breaker, a provider reading and a doctor finding (pure).

The page (``web.limits``) reads the same facts the API serves (``governance.breakers.Reading``,
``provider_io.to_json``, ``doctor`` findings) and turns them into words here, so every sentence is tested as a
table without a database. Nothing here decides whether mail may move; it only says what the readings say.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mailnode.governance.breakers import Breaker, Reading, UnarmedReason

#: The page that applies each doctor finding's fix, by finding name (``doctor.checks.CHECKS``). Total over
#: the registered checks (a test); None where no page applies the fix (the fix is a setting, a command or the
#: database), and a name it has never seen gets no link (``fix_page``: fail closed to no link).
FIX_PAGES: dict[str, str | None] = {
    "database_reachable": None,
    "migrations_applied": None,
    "evidence_store_writable": None,
    "audit_chain_intact": "/limits#audit",
    "receipts_quarantined": None,
    "materialisation_backlog": None,
    "delivery_visibility": None,
    "delivery_attribution": None,
    "send_breakers": "/limits#breakers",
    "domain_paused": "/limits/pauses",
    "domain_pause_pending": "/limits/pauses",
    "provider_breaker": "/limits#provider",
    "unverified_contact_addresses": "/people",
    "butler_paused": "/butlers",
    "butler_trigger_unrouted": "/butlers",
    "butler_run_silence": "/butlers",
    "butler_loop_detection": "/butlers",
    "butler_runs_stuck": "/butlers",
    "system_sender_missing": None,
    "system_sender_paused": "/limits/pauses",
}

#: What each breaker is called on the page, and what its reading counts. Total over ``Breaker``.
BREAKER_LABELS: dict[Breaker, tuple[str, str]] = {
    Breaker.VOLUME: ("Volume", "recipients handed over"),
    Breaker.BOUNCE_RATE: ("Bounce rate", "bounced"),
    Breaker.COMPLAINT_RATE: ("Complaint rate", "complained"),
}

#: What each provider breaker state is called on the page. Total over ``governance.provider.BreakerState``;
#: an unknown state reads as its own name with "unknown" (never as open).
PROVIDER_STATE_WORDS: dict[str, str] = {
    "open": "open: the quota ceilings alone decide",
    "shut": "shut: a pause is in force, nothing is handed over",
    "probe_due": "probe due: the pause has ended, the next hand-over tests the provider",
}

#: The mail classes in the order the page lists their ceilings (``vocabulary.mail_classes``).
CLASSES = ("realtime", "correspondence", "deferrable")


def fix_page(finding_name: str) -> str | None:
    """The page that applies ``finding_name``'s fix, or None (no page, or a name not in ``FIX_PAGES``)."""
    return FIX_PAGES.get(finding_name)


def duration_words(seconds: int) -> str:
    """``seconds`` as people say it: ``45 s``, ``12 min``, ``3 h 5 min`` (rounded down to the minute past 60 s)."""
    if seconds < 60:
        return f"{max(seconds, 0)} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def instant_words(at: datetime) -> str:
    """An aware instant as ``2026-12-03 07:15 UTC``."""
    return at.strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class BreakerRow:
    """One breaker as the page shows it.

    Attributes:
        key: the breaker's name in the API (``bounce_rate``).
        label: its name in words.
        status: ``tripped``, ``armed`` or ``unarmed`` (the CSS class and the word shown).
        reading: the reading against its limit in words (never a percentage while unarmed).
        limit: the limit in words.
        window: the window in words.
        release: when a tripped breaker will next let mail go, in words; None when it is not tripped.
    """

    key: str
    label: str
    status: str
    reading: str
    limit: str
    window: str
    release: str | None


def breaker_row(reading: Reading, now: datetime) -> BreakerRow:
    """``reading`` at ``now`` in words (pure).

    Unarmed: ``too few observations: 12 of 20`` or ``nothing observed: 0 of 20`` and no percentage. Armed:
    the count against the limit, or the percentage with its counts. Tripped: when mail next goes, exact for
    the volume (the oldest hand-over leaves the window) and "at the earliest" for a rate (its denominator
    moves too); a tripped reading without a retry time says so rather than guessing.
    """
    label, counted = BREAKER_LABELS[reading.breaker]
    window = duration_words(reading.window_seconds)
    if reading.breaker is Breaker.VOLUME:
        text = f"{reading.observed} of {reading.limit} {counted}"
        limit = f"at most {reading.limit} recipients per {window}"
    elif not reading.armed:
        why = UnarmedReason(reading.unarmed_reason) if reading.unarmed_reason else UnarmedReason.NO_OBSERVATIONS
        words = "too few observations" if why is UnarmedReason.TOO_FEW_OBSERVATIONS else "nothing observed"
        text = f"{words}: {reading.observations} of {reading.min_observations}; no rate is given and it cannot trip"
        limit = f"over {reading.limit} %, once {reading.min_observations} observations are in the window"
    else:
        text = f"{reading.percent} % ({reading.observed} {counted} of {reading.observations} observations)"
        limit = f"over {reading.limit} %, once {reading.min_observations} observations are in the window"
    status = "tripped" if reading.tripped else ("armed" if reading.armed else "unarmed")
    release = None
    if reading.tripped:
        if reading.retry_after_seconds is None:
            release = "not known: no row in the window says when it leaves"
        else:
            at = instant_words(now + timedelta(seconds=reading.retry_after_seconds))
            wait = duration_words(reading.retry_after_seconds)
            release = (f"mail goes again at {at} (in {wait}), when the oldest hand-over leaves the window"
                       if reading.retry_after_exact else
                       f"at {at} at the earliest (in {wait}), when the oldest {counted} row leaves the window; "
                       "the rate is read again then")
    return BreakerRow(reading.breaker.value, label, status, text, limit, window, release)


@dataclass(frozen=True)
class ClassCeiling:
    """One mail class's ceiling on the day's provider reading and what is left under it, in words."""

    mail_class: str
    ceiling: str
    left: str


def class_ceilings(provider: dict[str, Any]) -> list[ClassCeiling]:
    """Each class's ceiling and room left under it, from one ``provider_io.to_json`` reading (pure).

    Without a daily limit there is no ceiling; without a reading today the room left is "not known" (never the
    whole ceiling: the provider has not said how much was used)."""
    used = provider.get("daily_used")
    out = []
    for name in CLASSES:
        ceiling = provider["ceilings"].get(name)
        if provider.get("daily_limit") is None or ceiling is None:
            out.append(ClassCeiling(name, "no daily cap", "no daily cap"))
            continue
        left = "not known: no reading today" if used is None else str(max(ceiling - int(used), 0))
        out.append(ClassCeiling(name, f"stops at {ceiling}", left))
    return out


def provider_state_words(state: str) -> str:
    """``state`` in words (``PROVIDER_STATE_WORDS``); an unknown state says so and is never called open."""
    return PROVIDER_STATE_WORDS.get(state, f"{state}: a state this page does not know; read it as shut")


def quota_words(provider: dict[str, Any]) -> str:
    """The day's quota reading in words: ``42 of 100 (42 %)``, or why there is none (never a 0 %)."""
    if provider.get("daily_limit") is None:
        return "no daily cap: the provider reports no daily quota"
    if provider.get("daily_used") is None:
        return f"no reading today (of {provider['daily_limit']}): the provider has not answered a hand-over today"
    return f"{provider['daily_used']} of {provider['daily_limit']} ({provider['quota_percent']} %)"
