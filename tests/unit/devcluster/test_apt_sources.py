"""Deriving the deb-src entry from the machine's apt sources."""

import pytest

from united.devcluster.sources import (
    needs_deb_src,
    parse_deb822,
    parse_one_line,
    parse_sources,
    render_deb_src,
)

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def test_deb822_entries_are_parsed_with_options() -> None:
    entries = parse_deb822(DEB822)
    assert [e.suites for e in entries] == [("bookworm", "bookworm-updates"), ("bookworm-security",)]
    assert entries[0].options == {"Signed-By": "/usr/share/keyrings/debian-archive-keyring.gpg"}


def test_deb_src_mirrors_the_deb_entry_of_the_suite() -> None:
    entries = parse_deb822(DEB822)
    assert needs_deb_src(entries, "bookworm")
    assert render_deb_src(entries, "bookworm") == (
        "Types: deb-src\n"
        "URIs: http://deb.debian.org/debian\n"
        "Suites: bookworm\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


def test_rendered_entry_satisfies_the_check() -> None:
    entries = parse_deb822(DEB822)
    stanza = render_deb_src(entries, "bookworm")
    files = {"/etc/apt/sources.list.d/debian.sources": DEB822, "/x/united.sources": stanza}
    assert not needs_deb_src(parse_sources(files), "bookworm")


def test_disabled_deb_src_does_not_count() -> None:
    text = DEB822 + "\nTypes: deb-src\nURIs: http://m/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n"
    assert needs_deb_src(parse_deb822(text), "bookworm")


def test_one_line_sources_with_options() -> None:
    text = (
        "# comment\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror/debian bookworm main contrib\n"
        "deb-src http://mirror/debian bullseye main\n"
    )
    entries = parse_one_line(text)
    assert needs_deb_src(entries, "bookworm")
    assert not needs_deb_src(entries, "bullseye")
    stanza = render_deb_src(entries, "bookworm")
    assert "URIs: http://mirror/debian\n" in stanza
    assert "Signed-By: /k.gpg\n" in stanza
    assert "Architectures: amd64\n" in stanza


def test_no_deb_entry_for_the_suite_is_an_error() -> None:
    with pytest.raises(LookupError, match="trixie"):
        render_deb_src(parse_deb822(DEB822), "trixie")
