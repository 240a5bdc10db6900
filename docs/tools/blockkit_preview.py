"""A small Block Kit preview of our own: the JSON of ``workload-doctor diagnose --format json`` as a
Slack-like HTML page (the card, its buttons and the thread replies the buttons post).

Usage: ``python docs/tools/blockkit_preview.py ANSWER.json OUT.html [--thread]``

Only what our cards use is drawn: header, section (text and fields), context, divider, actions. The
mrkdwn of the payload is already escaped for ``& < >`` by the renderer, so it is HTML-safe as it is; this
only turns ``*bold*``, ``_italic_``, `` `code` `` and fences into tags.
"""

from __future__ import annotations

import html
import json
import re
import sys
from typing import Any

_FENCE = re.compile(r"```(.*?)```", re.S)
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_([^_\n]+)_(?![\w_])")

CSS = """
body{margin:0;display:flow-root;background:#fff;color:#1d1c1d;
  font:15px/1.46 -apple-system,'Segoe UI','Noto Sans',Lato,sans-serif}
.msg{display:flex;gap:8px;padding:12px 16px}
.avatar{width:36px;height:36px;border-radius:6px;background:#4a154b;color:#fff;font-weight:700;
  display:flex;align-items:center;justify-content:center;flex:none}
.body{flex:1;min-width:0}
.who{font-weight:900}.who small{font-weight:400;color:#616061;margin-left:6px}
.app{background:#e8e8e8;color:#616061;font-size:10px;padding:1px 3px;border-radius:2px;font-weight:700}
h1{font-size:18px;font-weight:900;margin:6px 0 4px}
.sec{margin:4px 0;white-space:pre-wrap;word-wrap:break-word}
.fields{display:grid;grid-template-columns:1fr 1fr;gap:6px 16px;margin:6px 0}
.fields div{white-space:pre-wrap;word-wrap:break-word}
.ctx{color:#616061;font-size:12px;margin:6px 0}
code{font:12px Menlo,Monaco,'Noto Sans Mono',monospace;color:#c01343;background:#f6f6f6;
  border:1px solid #ddd;border-radius:3px;padding:0 3px}
pre{font:12px/1.5 Menlo,Monaco,'Noto Sans Mono',monospace;background:#f8f8f8;border:1px solid #ddd;
  border-radius:4px;padding:8px;white-space:pre-wrap;word-wrap:break-word;margin:4px 0}
.actions{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.btn{border:1px solid #bbb;border-radius:4px;padding:3px 12px;font-weight:700;font-size:13px;background:#fff}
.btn.primary{background:#007a5a;border-color:#007a5a;color:#fff}
.btn.link:after{content:' ↗';font-weight:400}
hr{border:0;border-top:1px solid #ddd;margin:8px 0}
.replies{color:#1264a3;font-size:13px;font-weight:700;margin-top:6px}
.thread{border-top:1px solid #ddd;margin-top:4px;background:#fafafa}
.thread h2{font-size:13px;color:#616061;margin:10px 16px 0;text-transform:uppercase;letter-spacing:.04em}
.file{border:1px solid #ddd;border-radius:6px;padding:8px;background:#fff}
.file b{display:block;margin-bottom:4px}
"""


def mrkdwn(text: str) -> str:
    fences: list[str] = []

    def keep(m: re.Match[str]) -> str:
        fences.append(m.group(1))
        return f"\x00{len(fences) - 1}\x00"

    text = _FENCE.sub(keep, text)
    text = _CODE.sub(r"<code>\1</code>", text)
    text = _BOLD.sub(r"<b>\1</b>", text)
    text = _ITALIC.sub(r"<i>\1</i>", text)
    return re.sub(r"\x00(\d+)\x00", lambda m: f"<pre>{fences[int(m.group(1))].strip(chr(10))}</pre>", text)


def text_of(obj: dict[str, Any]) -> str:
    if obj.get("type") == "plain_text":
        return html.escape(obj.get("text", ""))
    return mrkdwn(obj.get("text", ""))


def blocks_html(blocks: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "header":
            out.append(f"<h1>{text_of(b['text'])}</h1>")
        elif kind == "section":
            if "text" in b:
                out.append(f"<div class=sec>{text_of(b['text'])}</div>")
            if b.get("fields"):
                cells = "".join(f"<div>{text_of(f)}</div>" for f in b["fields"])
                out.append(f"<div class=fields>{cells}</div>")
        elif kind == "context":
            out.append("<div class=ctx>" + " ".join(text_of(e) for e in b.get("elements", [])) + "</div>")
        elif kind == "divider":
            out.append("<hr>")
        elif kind == "actions":
            btns = []
            for e in b.get("elements", []):
                cls = "btn" + (" primary" if e.get("style") == "primary" else "") + (" link" if e.get("url") else "")
                btns.append(f"<span class='{cls}'>{text_of(e['text'])}</span>")
            out.append("<div class=actions>" + "".join(btns) + "</div>")
    return "\n".join(out)


def message(inner: str, when: str = "10:15") -> str:
    return (
        "<div class=msg><div class=avatar>WD</div><div class=body>"
        f"<div class=who>Workload Doctor <span class=app>APP</span><small>{when}</small></div>{inner}</div></div>"
    )


def page(answer: dict[str, Any], with_thread: bool = False) -> str:
    card = blocks_html(answer.get("blocks") or [])
    thread = answer.get("thread") or []
    shown = [m for m in thread if m.get("via") == "auto"]
    if shown or thread:
        buttons = " (Evidence, Logs)" if any(m.get("via") != "auto" for m in thread) else ""
        card += f"<div class=replies>{len(thread)} replies in the thread{buttons}</div>"
    body = message(card)
    if with_thread:
        parts = ["<div class=thread>"]
        for via in ("auto", "evidence", "logs"):
            items = [m for m in thread if m.get("via") == via]
            if not items:
                continue
            parts.append(
                f"<h2>{ {'auto': 'posted at once', 'evidence': 'Evidence button', 'logs': 'Logs button'}[via] }</h2>"
            )
            for m in items:
                if "snippet" in m:
                    s = m["snippet"]
                    title, content = html.escape(s["title"]), html.escape(s["content"])
                    inner = f"<div class=file><b>📄 {title}</b><pre>{content}</pre></div>"
                else:
                    inner = blocks_html(m.get("blocks") or [])
                parts.append(message(inner))
        parts.append("</div>")
        body += "".join(parts)
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>preview</title><style>{CSS}</style></head><body>{body}"
        "<script>var w=new URLSearchParams(location.search).get('w');if(w){document.body.style.width=w+'px'}"
        "document.title=String(Math.ceil(document.body.getBoundingClientRect().bottom)+12)</script></body></html>"
    )


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        answer = json.load(fh)
    with open(argv[2], "w", encoding="utf-8") as fh:
        fh.write(page(answer, with_thread="--thread" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
