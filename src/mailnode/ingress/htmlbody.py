"""An HTML body made safe to show (nh3) and made into text (inscriptis), within bounded cost.

Pure functions over a string; no I/O. ``refusal`` decides first whether the HTML may be handed to the two
libraries at all (``budgets.HTML_NESTING_MAX``: the sanitiser is quadratic in nesting); ``bounded`` cuts it to
``budgets.HTML_BODY_MAX_CHARS``. ``sanitise`` keeps what a mail client shows and nothing that runs or loads:
no scripts, no event handlers, no forms, no frames, objects or embedded documents, no style sheets; ``cid:``
images point at the node's own attachment route (RFC 2392); remote images (``http(s):`` ``src``, ``srcset``,
``background``, CSS ``url()``) are removed unless the reader asked for them, and even then nothing else is
allowed through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

import nh3
from inscriptis import get_text

from mailnode import budgets

#: Elements kept (their attributes are in :data:`ATTRIBUTES`); anything else is removed with its text kept,
#: and :data:`DROPPED_WITH_CONTENT` is removed text and all. No ``form``, ``input``, ``button``, ``iframe``,
#: ``object``, ``embed``, ``svg``, ``math``, ``link``, ``meta``, ``base`` or ``style``.
TAGS = frozenset({
    "a", "abbr", "address", "b", "bdi", "bdo", "big", "blockquote", "br", "caption", "center", "cite", "code",
    "col", "colgroup", "dd", "del", "dfn", "div", "dl", "dt", "em", "font", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike",
    "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var",
})
#: Elements removed with everything inside them.
DROPPED_WITH_CONTENT = frozenset({"script", "style", "title", "template", "textarea", "select", "object",
                                  "iframe", "noembed", "noframes", "xmp"})
#: Presentational attributes mail relies on, per element (``*``: all). No ``on*`` handler, no ``srcset``,
#: no ``formaction``; ``style`` is filtered by :func:`_style`.
ATTRIBUTES: dict[str, set[str]] = {
    "*": {"align", "valign", "dir", "lang", "title", "style", "width", "height", "bgcolor", "color"},
    "a": {"href", "name"},
    "img": {"src", "alt", "border", "hspace", "vspace"},
    "font": {"face", "size"},
    "table": {"border", "cellpadding", "cellspacing", "background", "summary"},
    "td": {"colspan", "rowspan", "nowrap", "background"},
    "th": {"colspan", "rowspan", "nowrap", "background", "scope"},
    "tr": {"background"},
    "div": {"background"},
    "col": {"span"},
    "colgroup": {"span"},
    "ol": {"start", "type", "reversed"},
    "ul": {"type"},
    "li": {"value"},
    "blockquote": {"cite"},
    "q": {"cite"},
    "del": {"cite", "datetime"},
    "ins": {"cite", "datetime"},
}
#: URL schemes a link may use (a link is followed only when the reader clicks it); ``cid`` only long enough to
#: be rewritten by :func:`_url`.
URL_SCHEMES = frozenset({"http", "https", "mailto", "tel", "cid"})
#: CSS properties kept in a ``style`` attribute (layout and typography; nothing that loads or positions over
#: the page: no ``background-image``, ``list-style-image``, ``content``, ``position``, ``behavior``).
STYLE_PROPERTIES = frozenset({
    "background-color", "border", "border-bottom", "border-collapse", "border-color", "border-left",
    "border-radius", "border-right", "border-spacing", "border-style", "border-top", "border-width", "color",
    "direction", "display", "font", "font-family", "font-size", "font-style", "font-variant", "font-weight",
    "height", "letter-spacing", "line-height", "margin", "margin-bottom", "margin-left", "margin-right",
    "margin-top", "max-width", "min-width", "padding", "padding-bottom", "padding-left", "padding-right",
    "padding-top", "table-layout", "text-align", "text-decoration", "text-indent", "text-transform",
    "vertical-align", "white-space", "width", "word-break", "word-wrap",
})
#: CSS that could load something or run something in any property: ``url(``, ``image-set(``, ``expression(``,
#: ``@import``, and a backslash (CSS escapes can spell any of them).
_STYLE_LOADS = re.compile(r"url\s*\(|image-set|image\s*\(|expression|@import|\\|javascript:", re.IGNORECASE)
#: A start tag (group 1: "/" for an end tag, group 2: the name) for the nesting measure.
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")
#: Elements that never hold others (HTML §13.1.2 void elements) or that the parser closes by itself when the
#: next one opens (HTML §13.1.2.4 optional end tags): not counted as nesting.
_NOT_NESTING = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr", "param",
    "p", "li", "td", "th", "tr", "dt", "dd", "option", "optgroup", "rt", "rp", "tbody", "thead", "tfoot",
    "colgroup", "caption",
})
#: The node's route serving one attachment; ``{message_id}`` and ``{part}`` are filled in.
ATTACHMENT_URL = "/api/messages/{message_id}/attachments/{part}"


def nesting(html: str, cap: int = budgets.HTML_NESTING_MAX) -> int:
    """The most elements open at once in ``html``, counted leniently over its tags (pure, linear); counting
    stops at ``cap + 1`` so that each end tag's search stays within ``cap`` open elements.

    End tags close the nearest open element of their name and everything above it, as the parser would;
    an end tag nothing opened is ignored. Elements in :data:`_NOT_NESTING` and self-closed tags are not counted.
    """
    depth = most = 0
    open_names: list[str] = []
    for match in _TAG.finditer(html):
        name = match.group(2).lower()
        if name in _NOT_NESTING or match.group(3):
            continue
        if match.group(1):
            if name in open_names:
                index = len(open_names) - 1 - open_names[::-1].index(name)
                del open_names[index:]
                depth = len(open_names)
            continue
        open_names.append(name)
        depth += 1
        most = max(most, depth)
        if most > cap:
            break
    return most


def refusal(html: str) -> str | None:
    """Why ``html`` must be neither sanitised nor converted, in words, or ``None`` (pure; call it on the
    :func:`bounded` text)."""
    if nesting(html) > budgets.HTML_NESTING_MAX:
        return f"its elements nest more than {budgets.HTML_NESTING_MAX:,} deep (HTML_NESTING_MAX)"
    return None


def bounded(html: str) -> tuple[str, str | None]:
    """``html`` cut to at most ``budgets.HTML_BODY_MAX_CHARS`` characters (before a tag the cut would halve),
    and a note in words when it was cut."""
    limit = budgets.HTML_BODY_MAX_CHARS
    if len(html) <= limit:
        return html, None
    cut = html[:limit]
    # A tag cut in half would be read as text ("<tr><td>ce" shows "<"), so the cut ends before it.
    last_open = cut.rfind("<")
    if last_open > cut.rfind(">"):
        cut = cut[:last_open]
    return cut, (f"it is {len(html):,} characters long; the first {len(cut):,} were read "
                 "(HTML_BODY_MAX_CHARS)")


def to_text(html: str) -> str:
    """The text a reader sees in ``html`` (inscriptis: block layout, lists and tables kept as lines), with
    trailing white space trimmed. The caller has checked :func:`refusal` and :func:`bounded`."""
    return get_text(html).strip("\n")


@dataclass(frozen=True)
class Sanitised:
    """The sanitised HTML and how many remote references (images, backgrounds, CSS ``url()``) were removed
    (0 when the reader allowed remote images)."""

    html: str
    remote_removed: int


def _cid_target(value: str, message_id: str, parts_by_cid: Mapping[str, str]) -> str | None:
    """The attachment URL a ``cid:`` URL names (RFC 2392 §2: the Content-ID, URL-encoded), or ``None``."""
    wanted = unquote(value[4:]).strip().removeprefix("<").removesuffix(">")
    part = parts_by_cid.get(wanted)
    if part is None:
        folded = wanted.lower()
        part = next((p for cid, p in parts_by_cid.items() if cid.lower() == folded), None)
    return ATTACHMENT_URL.format(message_id=message_id, part=part) if part is not None else None


def _is_remote(value: str) -> bool:
    """Whether a URL would load from another host: ``http:``, ``https:`` or scheme-relative ``//``."""
    lowered = value.strip().lower()
    return lowered.startswith(("http:", "https:", "//"))


def sanitise(html: str, *, message_id: str, parts_by_cid: Mapping[str, str], remote_images: bool) -> Sanitised:
    """Make ``html`` safe to show inside the node's pages (pure).

    Args:
        html: an HTML body the caller has checked with :func:`refusal` and cut with :func:`bounded`.
        message_id: the message's ``msg_...`` id, for ``cid:`` URLs.
        parts_by_cid: Content-ID (without brackets) -> part id
            (``ingress.attachments.AttachmentSummary.by_content_id``).
        remote_images: keep ``http(s):`` images, backgrounds and CSS ``url()`` (the reader asked for them).

    An image ``src`` keeps a ``cid:`` URL rewritten to :data:`ATTACHMENT_URL` (dropped when no part has that
    Content-ID) and, only with ``remote_images``, an ``http(s):`` URL; anything else (``data:``, relative,
    ``javascript:``) is dropped. A link keeps only absolute ``http(s):``, ``mailto:`` and ``tel:`` URLs and
    gets ``rel="noopener noreferrer"`` and ``target="_blank"``. Without ``remote_images`` a ``style`` holding
    anything in :data:`_STYLE_LOADS` is dropped whole, and so is a ``background`` attribute.
    """
    removed = 0

    def keep(tag: str, attribute: str, value: str) -> str | None:
        nonlocal removed
        if attribute == "style":
            if _STYLE_LOADS.search(value):
                if remote_images and "\\" not in value and not re.search(r"expression|@import|javascript:",
                                                                         value, re.IGNORECASE):
                    return value
                removed += 1
                return None
            return value
        if attribute == "background":
            if remote_images and _is_remote(value) and not value.strip().startswith("//"):
                return value
            removed += 1
            return None
        if tag == "img" and attribute == "src":
            if value.strip().lower().startswith("cid:"):
                return _cid_target(value.strip(), message_id, parts_by_cid)
            if _is_remote(value):
                if remote_images and not value.strip().startswith("//"):
                    return value
                removed += 1
            return None
        if attribute in ("href", "cite"):
            lowered = value.strip().lower()
            return value if lowered.startswith(("http:", "https:", "mailto:", "tel:")) else None
        return value

    cleaned = nh3.clean(
        html,
        tags=set(TAGS),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        attribute_filter=keep,
        strip_comments=True,
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        url_schemes=set(URL_SCHEMES),
        filter_style_properties=set(STYLE_PROPERTIES) | ({"background", "background-image"} if remote_images
                                                         else set()),
    )
    return Sanitised(html=cleaned, remote_removed=removed)
