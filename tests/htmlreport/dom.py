"""A page's elements as data, from its HTML (the file, or the DOM a browser dumped)::

    page = Dom.of(html)
    page.find("rect", "cell failed")     # every <rect class="cell failed">, with attrs and title
    page.tags()                          # every tag name that occurs
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "link", "br", "img", "input", "hr", "area", "base", "col", "embed", "source",
        "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    title: str = ""  # the text of its <title> child: what shows on hover
    text: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []

    @classmethod
    def of(cls, html: str) -> Dom:
        dom = cls()
        dom.feed(html)
        dom.close()
        return dom

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.elements.append(element)
        if tag not in VOID:
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self._open:
            return
        self._open[-1].text.append(data)
        if self._open[-1].tag == "title" and len(self._open) > 1:
            self._open[-2].title += data

    def find(self, tag: str, classes: str = "") -> list[Element]:
        wanted = set(classes.split())
        return [e for e in self.elements if e.tag == tag and wanted <= e.classes]

    def tags(self) -> set[str]:
        return {element.tag for element in self.elements}

    def text(self) -> str:
        return "".join("".join(element.text) for element in self.elements)
