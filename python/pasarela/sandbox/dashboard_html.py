"""The dashboard's HTML, built from escaped parts: every value that came from a request, a webhook or the store
goes through :func:`html.escape` (attribute values included), and JSON is shown as text in ``<pre>``. The page
loads only the sandbox's own style sheet and script (:mod:`.dashboard_assets`)."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any, Optional
from urllib.parse import quote, urlencode

__all__ = ["FORM_TOKEN", "NAV", "Html", "badge", "esc", "evidence_link", "filters_form", "json_block", "link",
           "next_page", "page", "post_button", "table", "text_form", "when"]

Html = str
NAV = (("/sandbox/", "Transfers"), ("/sandbox/charges", "Charges"), ("/sandbox/webhooks", "Webhooks"),
       ("/sandbox/terminal", "Terminal"), ("/sandbox/requests", "Access log"),
       ("/sandbox/certification", "Certification"))
FORM_TOKEN = "page_token"  # noqa: S105 (the name of a form field)


def esc(value: object) -> Html:
    return html.escape("" if value is None else str(value), quote=True)


def when(epoch_ms: Optional[int]) -> Html:
    """UTC time of epoch milliseconds, to the millisecond."""
    if epoch_ms is None:
        return ""
    seconds, millis = divmod(int(epoch_ms), 1000)
    return esc(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}")


def link(href: str, text: object) -> Html:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def badge(word: object) -> Html:
    return f'<span class="verdict {esc(word)}">{esc(word)}</span>'


def json_block(value: Any) -> Html:
    return f"<pre>{esc(json.dumps(value, indent=2, ensure_ascii=False))}</pre>"


def evidence_link(item: str) -> Html:
    """``request:12``, ``delivery:7`` or ``transfer:<token>`` as a link to where the dashboard shows it."""
    kind, _, value = item.partition(":")
    target = {"request": f"/sandbox/requests/{quote(value, safe='')}",
              "delivery": f"/sandbox/webhooks#delivery-{quote(value, safe='')}",
              "transfer": f"/sandbox/transfers/{quote(value, safe='')}"}.get(kind)
    return link(target, item) if target else esc(item)


def table(headers: Sequence[str], rows: Iterable[Sequence[Html]], empty: str = "nothing yet") -> Html:
    """``rows`` are already HTML (build them with the helpers here)."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="muted">{esc(empty)}</td></tr>'
    head = "".join(f"<th>{esc(name)}</th>" for name in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def post_button(action: str, label: str, page_token: str, back: str, fields: Sequence[tuple[str, str]] = ()) -> Html:
    """A one-button form posting to ``action`` with the page's token, then back to ``back``."""
    hidden = "".join(f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'
                     for name, value in ((FORM_TOKEN, page_token), ("back", back), *fields))
    return f'<form method="post" action="{esc(action)}">{hidden}<button type="submit">{esc(label)}</button></form>'


def text_form(action: str, name: str, label: str, value: str, button: str, page_token: str, back: str) -> Html:
    """A form posting one text field ``name`` (and the page's token) to ``action``, then back to ``back``."""
    hidden = "".join(f'<input type="hidden" name="{esc(field)}" value="{esc(text)}">'
                     for field, text in ((FORM_TOKEN, page_token), ("back", back)))
    return (f'<form method="post" action="{esc(action)}" class="filters">{hidden}<label>{esc(label)}'
            f'<input type="text" name="{esc(name)}" value="{esc(value)}" size="60" spellcheck="false"></label>'
            f'<button type="submit">{esc(button)}</button></form>')


def filters_form(path: str, choices: Sequence[tuple[str, str, Sequence[str]]], chosen: dict[str, Optional[str]],
                 texts: Sequence[tuple[str, str]] = ()) -> Html:
    """A GET form of ``<select>`` filters: (name, label, allowed values) each, ``chosen`` preselected; ``texts``:
    (name, label) of free-text filters."""
    fields = []
    for name, label, allowed in choices:
        options = ['<option value="">any</option>'] + [
            f'<option value="{esc(value)}"{" selected" if chosen.get(name) == value else ""}>{esc(value)}</option>'
            for value in allowed]
        fields.append(f'<label>{esc(label)}<select name="{esc(name)}">{"".join(options)}</select></label>')
    for name, label in texts:
        fields.append(f'<label>{esc(label)}<input type="text" name="{esc(name)}" value="{esc(chosen.get(name) or "")}"'
                      ' spellcheck="false"></label>')
    return (f'<form method="get" action="{esc(path)}" class="filters">{"".join(fields)}'
            '<button type="submit">Filter</button></form>')


def next_page(path: str, cursor: Optional[str], chosen: dict[str, Optional[str]]) -> Html:
    if cursor is None:
        return ""
    query = urlencode({**{name: value for name, value in chosen.items() if value}, "cursor": cursor})
    return f"<p>{link(f'{path}?{query}', 'Older')}</p>"


def page(title: str, here: str, body: Html, *, version: str, page_token: str, back: str, clock_ms: int) -> Html:
    """A whole page: the navigation, the clock and its form, ``body``; ``data-version`` for the poller."""
    nav = "".join(f'<a href="{esc(href)}"{" class=here" if href == here else ""}>{esc(label)}</a>'
                  for href, label in NAV)
    clock = (f'<form method="post" action="/sandbox/actions/clock"><span title="the sandbox clock (UTC)">'
             f'{when(clock_ms)}</span><input type="hidden" name="{FORM_TOKEN}" value="{esc(page_token)}">'
             f'<input type="hidden" name="back" value="{esc(back)}">'
             '<input type="number" name="seconds" min="1" max="31536000" value="600" aria-label="seconds">'
             '<button type="submit">Advance clock</button></form>')
    search = ('<form method="get" action="/sandbox/search" class="search" role="search">'
              '<input type="search" name="q" placeholder="token, reference, ticket, document" aria-label="search" '
              'spellcheck="false"><button type="submit">Search</button></form>')
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(title)} · pasarela sandbox</title>"
            '<link rel="stylesheet" href="/sandbox/assets/dashboard.css"></head>'
            f'<body data-version="{esc(version)}"><header><span class="brand">pasarela sandbox</span>{nav}{search}'
            '<button type="button" id="pause" aria-pressed="false">Pause updates</button>'
            f'<span id="live"></span>{clock}</header><main><h1>{esc(title)}</h1>{body}</main>'
            '<script src="/sandbox/assets/dashboard.js"></script></body></html>')
