"""The ``Cluster`` model: a member cluster, the Secret holding its kubeconfig, how to probe it.

Parsed like every other kind (:class:`~united.api.reader.Reader`, ``field.path: message``
errors), and checked fully here, not only by the CRD schema: the controller must never act on a
``Cluster`` that slipped past the schema (an older CRD, a hand-made object), and the errors it
reports must read like the API server's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from united.api.document import Json
from united.api.field import FieldError, ManifestError, Path, duplicate, forbidden, invalid, required, too_many
from united.api.groups import GROUP
from united.api.names import dns_label_errors, dns_subdomain_errors
from united.api.reader import Reader

VERSION = "v1alpha1"
KIND = "Cluster"
PLURAL = "clusters"
API_VERSION = f"{GROUP}/{VERSION}"

DEFAULT_KEY = "kubeconfig"
DEFAULT_PERIOD_SECONDS = 10
DEFAULT_TIMEOUT_SECONDS = 3
PERIOD_RANGE = (1, 300)
TIMEOUT_RANGE = (1, 60)
MAX_NAMESPACES = 1000
KEY_PATTERN = "^[-._a-zA-Z0-9]+$"
"""A Secret data key (``IsConfigMapKey``): what the CRD schema enforces too."""
_KEY = re.compile(KEY_PATTERN)
_SPEC_FIELDS = frozenset(
    {"kubeconfigSecretRef", "probe", "namespaces", "allNamespaces", "createNamespaces", "allowProxy"}
)


@dataclass(frozen=True, slots=True)
class SecretRef:
    """``spec.kubeconfigSecretRef``: the host Secret whose ``data[key]`` is the member's
    self-contained kubeconfig."""

    namespace: str
    name: str
    key: str = DEFAULT_KEY

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Probe:
    """``spec.probe``: a ``GET /version`` every ``period_seconds``, given ``timeout_seconds``."""

    period_seconds: int = DEFAULT_PERIOD_SECONDS
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """One ``Cluster`` object, as the controller uses it."""

    name: str
    secret_ref: SecretRef
    probe: Probe = Probe()
    namespaces: frozenset[str] = frozenset()
    """The UnitedDeployment namespaces that may place subsets here (``spec.namespaces``)."""
    all_namespaces: bool = False
    """``spec.allNamespaces: true``: every host namespace may place subsets here."""
    create_namespaces: bool = False
    """``spec.createNamespaces: true``: the controller may create a missing namespace here."""
    allow_proxy: bool = False
    """``spec.allowProxy: true``: the member's kubeconfig may name a ``proxy-url``."""
    generation: int = 0

    def allows(self, namespace: str) -> bool:
        """Whether a UnitedDeployment in ``namespace`` may use this cluster: fail closed, so a
        ``Cluster`` that says nothing admits no namespace (every host tenant who may create a
        UnitedDeployment would otherwise run its pod template in every member)."""
        return self.all_namespaces or namespace in self.namespaces

    @classmethod
    def parse(cls, obj: Any) -> ClusterSpec:
        """The model of a raw ``Cluster``, or :class:`ManifestError` with every error found."""
        r = Reader()
        doc = r.obj(obj, Path())
        if doc is None:
            raise ManifestError(r.errors or [invalid(Path(), obj, "a Cluster must be an object")])
        meta_path = Path("metadata")
        meta = r.obj(doc.get("metadata"), meta_path) or {}
        name = r.string(meta.get("name"), meta_path.child("name")) or ""
        generation = meta.get("generation")
        spec_path = Path("spec")
        spec = r.obj(doc.get("spec"), spec_path, _SPEC_FIELDS)
        if spec is None:
            if "spec" not in doc:
                r.fail(required(spec_path))
            spec = {}
        ref = _secret_ref(r, spec.get("kubeconfigSecretRef"), spec_path.child("kubeconfigSecretRef"))
        probe = _probe(r, spec.get("probe"), spec_path.child("probe"))
        namespaces = _namespaces(r, spec.get("namespaces"), spec_path.child("namespaces"))
        all_namespaces = _flag(r, spec, spec_path, "allNamespaces")
        if all_namespaces and namespaces:
            r.fail(forbidden(spec_path.child("namespaces"), "may not be set together with spec.allNamespaces"))
        create_namespaces = _flag(r, spec, spec_path, "createNamespaces")
        allow_proxy = _flag(r, spec, spec_path, "allowProxy")
        if r.errors or ref is None:
            raise ManifestError(r.errors)
        return cls(
            name=name,
            secret_ref=ref,
            probe=probe,
            namespaces=namespaces,
            all_namespaces=all_namespaces,
            create_namespaces=create_namespaces,
            allow_proxy=allow_proxy,
            generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        )


def _secret_ref(r: Reader, value: Any, path: Path) -> SecretRef | None:
    raw = r.obj(value, path, frozenset({"namespace", "name", "key"}))
    if raw is None:
        if value is None:
            r.fail(required(path))
        return None
    namespace = _present(r, raw.get("namespace"), path.child("namespace"))
    name = _present(r, raw.get("name"), path.child("name"))
    key = r.string(raw.get("key"), path.child("key"))
    if namespace is not None:
        _check(r, dns_label_errors(namespace, path.child("namespace")))
    if name is not None:
        _check(r, dns_subdomain_errors(name, path.child("name")))
    if key is not None and not _KEY.match(key):
        detail = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
        r.fail(invalid(path.child("key"), key, detail))
    if namespace is None or name is None:
        return None
    return SecretRef(namespace=namespace, name=name, key=key or DEFAULT_KEY)


def _probe(r: Reader, value: Any, path: Path) -> Probe:
    raw = r.obj(value, path, frozenset({"periodSeconds", "timeoutSeconds"})) or {}
    period = _ranged(r, raw, path, "periodSeconds", PERIOD_RANGE, DEFAULT_PERIOD_SECONDS)
    timeout = _ranged(r, raw, path, "timeoutSeconds", TIMEOUT_RANGE, DEFAULT_TIMEOUT_SECONDS)
    if timeout >= period:
        detail = f"must be less than {path.child('periodSeconds')} ({period})"
        r.fail(invalid(path.child("timeoutSeconds"), timeout, detail))
    return Probe(period_seconds=period, timeout_seconds=timeout)


def _flag(r: Reader, spec: Json, path: Path, name: str) -> bool:
    """An optional boolean field of the spec; absent (or wrong, reported): False."""
    return r.boolean(spec.get(name), path.child(name)) or False


def _namespaces(r: Reader, value: Any, path: Path) -> frozenset[str]:
    items = r.array(value, path)
    if items is None:
        return frozenset()
    if len(items) > MAX_NAMESPACES:
        r.fail(too_many(path, len(items), MAX_NAMESPACES))
    seen: set[str] = set()
    for i, item in enumerate(items):
        p = path.index(i)
        namespace = _present(r, item, p)
        if namespace is None:
            continue
        if namespace in seen:
            r.fail(duplicate(p, namespace))
        seen.add(namespace)
        _check(r, dns_label_errors(namespace, p))
    return frozenset(seen)


def _present(r: Reader, value: Any, path: Path) -> str | None:
    """A string that must be there and non-empty."""
    if value in (None, ""):
        r.fail(required(path))
        return None
    return r.string(value, path)


def _ranged(r: Reader, raw: Json, path: Path, name: str, bounds: tuple[int, int], default: int) -> int:
    path = path.child(name)
    number = r.int32(raw.get(name), path)
    if number is None:
        return default
    low, high = bounds
    if not low <= number <= high:
        r.fail(invalid(path, number, f"must be between {low} and {high}, inclusive"))
        return default
    return number


def _check(r: Reader, errors: list[FieldError]) -> None:
    for error in errors:
        r.fail(error)
