"""Kubernetes name and label rules, and the names we derive for children and revisions.

Derived names are validated up front: a UnitedDeployment whose name is too long for the
labels we must write would otherwise fail only when the first child or pod is created.
"""

from __future__ import annotations

import re

from united.api.field import FieldError, Path, invalid

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
#: The API server keeps at most this much of a ``generateName`` prefix, then adds 5 characters.
GENERATE_NAME_PREFIX_MAX = 58
#: Longest hash suffix we append to revision names: FNV-32 in decimal, at most 10 digits.
REVISION_HASH_MAX = 10
#: Longest StatefulSet name whose pods still get a valid ``controller-revision-hash`` label.
STATEFULSET_NAME_MAX = LABEL_VALUE_MAX - REVISION_HASH_MAX - 1

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def dns_label_errors(value: str, path: Path) -> list[FieldError]:
    if len(value) > DNS1123_LABEL_MAX:
        return [invalid(path, value, f"must be no more than {DNS1123_LABEL_MAX} characters")]
    if not _LABEL.match(value):
        return [
            invalid(
                path,
                value,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character",
            )
        ]
    return []


def dns_subdomain_errors(value: str, path: Path) -> list[FieldError]:
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return [invalid(path, value, f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")]
    if not _SUBDOMAIN.match(value):
        return [
            invalid(
                path,
                value,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
            )
        ]
    return []


def label_key_errors(key: str, path: Path) -> list[FieldError]:
    """A qualified name: optional DNS-subdomain prefix and ``/``, then a name of at most 63 chars."""
    prefix, _, name = key.rpartition("/")
    out: list[FieldError] = []
    if "/" in key and not prefix:
        out.append(invalid(path, key, "prefix part must be non-empty"))
    elif prefix and dns_subdomain_errors(prefix, path):
        out.append(invalid(path, key, "prefix part must be a lowercase RFC 1123 subdomain"))
    if not name:
        out.append(invalid(path, key, "name part must be non-empty"))
    elif len(name) > LABEL_VALUE_MAX:
        out.append(invalid(path, key, f"name part must be no more than {LABEL_VALUE_MAX} characters"))
    elif not _QUALIFIED.match(name):
        out.append(
            invalid(
                path,
                key,
                "name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
            )
        )
    return out


def label_value_errors(value: str, path: Path) -> list[FieldError]:
    if len(value) > LABEL_VALUE_MAX:
        return [invalid(path, value, f"must be no more than {LABEL_VALUE_MAX} characters")]
    if value and not _QUALIFIED.match(value):
        return [
            invalid(
                path,
                value,
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
            )
        ]
    return []


def child_prefix(ud_name: str, subset: str) -> str:
    """``generateName`` of a subset's child: ``<ud>-<subset>-``."""
    prefix = f"{ud_name}-{subset}-"
    return prefix if len(prefix) <= DNS1123_SUBDOMAIN_MAX else f"{ud_name}-"


def revision_name(ud_name: str, hash_text: str) -> str:
    """``<ud>-<hash>``: ControllerRevision name and the value of the revision label on pods."""
    return f"{ud_name[:223]}-{hash_text}"
