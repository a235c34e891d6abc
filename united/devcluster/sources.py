"""Reading apt's source lists and rendering the ``deb-src`` entry the build needs.

The Kubernetes binaries are compiled from Debian's ``kubernetes`` *source* package,
which apt only fetches when a ``deb-src`` entry exists. Machines here are set up
with ``deb`` entries only, in deb822 ``.sources`` files (or one-line ``.list``
files on older images), so the entry is derived from the existing ``deb`` entry
for the same archive — same mirror, same keyring — instead of being hard-coded.
These are pure functions over file contents so they can be unit-tested.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceEntry:
    """One apt source (a deb822 stanza or a one-line entry), normalised."""

    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    components: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict)

    def covers(self, kind: str, suite: str, component: str) -> bool:
        """Whether this entry provides ``kind`` (``deb``/``deb-src``) of suite/component."""
        enabled = self.options.get("Enabled", "yes").lower() != "no"
        return enabled and kind in self.types and suite in self.suites and component in self.components


def parse_deb822(text: str) -> list[SourceEntry]:
    """Parse a deb822 ``.sources`` file (stanzas separated by blank lines)."""
    entries: list[SourceEntry] = []
    for stanza in _stanzas(text):
        fields: dict[str, str] = {}
        last = ""
        for line in stanza:
            if line[:1] in (" ", "\t") and last:
                fields[last] += " " + line.strip()
                continue
            key, sep, value = line.partition(":")
            if not sep:
                continue
            last = key.strip()
            fields[last] = value.strip()
        if "Types" not in fields or "URIs" not in fields:
            continue
        options = {k: v for k, v in fields.items() if k not in ("Types", "URIs", "Suites", "Components")}
        entries.append(
            SourceEntry(
                types=tuple(fields["Types"].split()),
                uris=tuple(fields["URIs"].split()),
                suites=tuple(fields.get("Suites", "").split()),
                components=tuple(fields.get("Components", "").split()),
                options=options,
            )
        )
    return entries


def _stanzas(text: str) -> Iterable[list[str]]:
    stanza: list[str] = []
    for raw in text.splitlines():
        if raw.lstrip().startswith("#"):
            continue
        if not raw.strip():
            if stanza:
                yield stanza
            stanza = []
            continue
        stanza.append(raw.rstrip())
    if stanza:
        yield stanza


_ONE_LINE_OPTION_NAMES = {"signed-by": "Signed-By", "arch": "Architectures", "trusted": "Trusted"}


def parse_one_line(text: str) -> list[SourceEntry]:
    """Parse one-line-style ``sources.list`` entries (``deb [opts] URI suite comps...``)."""
    entries: list[SourceEntry] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        if kind not in ("deb", "deb-src"):
            continue
        options: dict[str, str] = {}
        rest = rest.strip()
        if rest.startswith("["):
            opts, _, rest = rest[1:].partition("]")
            for opt in opts.split():
                key, _, value = opt.partition("=")
                options[_ONE_LINE_OPTION_NAMES.get(key, key)] = value
        words = rest.split()
        if len(words) < 2:
            continue
        entries.append(
            SourceEntry(
                types=(kind,),
                uris=(words[0],),
                suites=(words[1],),
                components=tuple(words[2:]),
                options=options,
            )
        )
    return entries


def parse_sources(files: dict[str, str]) -> list[SourceEntry]:
    """Parse every source file by its name (``*.sources`` is deb822, the rest one-line)."""
    entries: list[SourceEntry] = []
    for name, text in sorted(files.items()):
        entries.extend(parse_deb822(text) if name.endswith(".sources") else parse_one_line(text))
    return entries


def needs_deb_src(entries: list[SourceEntry], suite: str, component: str = "main") -> bool:
    """True when no enabled ``deb-src`` entry provides ``suite``/``component``."""
    return not any(e.covers("deb-src", suite, component) for e in entries)


def render_deb_src(entries: list[SourceEntry], suite: str, component: str = "main") -> str:
    """A deb822 stanza for ``deb-src`` of ``suite``/``component``, mirroring the
    ``deb`` entry that already serves it (same URIs and options, e.g. Signed-By).

    Raises ``LookupError`` when no ``deb`` entry serves that suite, since then there
    is no trustworthy mirror or keyring to copy.
    """
    for entry in entries:
        if entry.covers("deb", suite, component):
            lines = [
                "Types: deb-src",
                f"URIs: {' '.join(entry.uris)}",
                f"Suites: {suite}",
                f"Components: {component}",
            ]
            lines += [f"{key}: {value}" for key, value in entry.options.items() if key != "Enabled"]
            return "\n".join(lines) + "\n"
    raise LookupError(f"no apt 'deb' entry serves {suite}/{component}; cannot derive a deb-src entry")
