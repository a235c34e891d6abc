"""The pod webhook's two configurations, both named ``united-workloadspread``.

* **Mutating** on pod ``CREATE`` (``/mutate-pods``): the subset's placement is injected.
* **Validating** on pod ``DELETE`` and ``pods/eviction`` ``CREATE`` (``/validate-pods``):
  the deleting bookkeeping. It never refuses; it only records. A second webhook there, on
  WorkloadSpread ``CREATE`` in both API groups (``/validate-workloadspreads``), never refuses
  either: it adds the spread's namespace to the pod webhooks' targets (below) before the
  spread exists, so the pods created right after it reach the webhook.

Why these settings:

* ``failurePolicy: Ignore`` and ``timeoutSeconds: 3`` by default: **an outage of the
  controller never blocks pod creation** anywhere in the cluster; such pods belong to no
  subset, are reported and removed first on scale-in. ``Fail`` is an option for clusters
  that prefer a pod not to exist over a pod in the wrong place: then every pod CREATE in a
  matched namespace fails while no replica answers (a crash loop of the controller stops
  all rollouts, including its own unless its namespace is excluded — it is).
* ``sideEffects: NoneOnDryRun``: the webhook books slots in WorkloadSpread status, but not
  for dry-run requests.
* ``matchPolicy: Equivalent``: pods reached through another API version still match.
* ``reinvocationPolicy: Never``: the injection is idempotent and other mutators' changes do
  not alter the subset chosen.
* **Exclusions**: the namespaceSelector leaves out ``kube-system`` and the controller's own
  namespace twice over: by ``kubernetes.io/metadata.name`` (set on every namespace since
  Kubernetes 1.21) and by the opt-out label :data:`EXCLUDE_LABEL` ``=disabled``, which works on
  1.20 too (the controller puts it on both namespaces where the server has not labelled them
  with their name; anyone may put it on another).
  Every field the API server would default is spelled out, so the object read back equals
  the object written and "unchanged" needs no knowledge of defaults.
* **Only namespaces that hold a WorkloadSpread** (servers that label every namespace with its
  name, Kubernetes 1.22+): the controller adds ``kubernetes.io/metadata.name In [...]``, the
  namespaces where spreads live (:func:`with_targets`), and keeps it current. Pods elsewhere
  never reach the webhook, so its outage or stall touches only namespaces that use spreads. The
  expression only narrows what the rest of the selector allows (the expressions are ANDed), and
  it is the one part of a selector the controller may change (``manifests/admission-policy``).
  With more than :data:`MAX_TARGETED_NAMESPACES` such namespaces, or on older servers, it is
  left out: every namespace but the excluded ones is sent, as before. The spreads webhook
  never carries it (it is how a namespace gets in) and its ``failurePolicy`` is always
  ``Ignore``: creating a spread never waits on the controller.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from united.api.groups import GROUP, KRUISE_GROUP

JSON = dict[str, Any]
FailurePolicy = Literal["Ignore", "Fail"]

NAME = "united-workloadspread"
"""The name of both configurations (the RBAC grants use it as ``resourceNames``)."""
MUTATE_PATH = "/mutate-pods"
VALIDATE_PATH = "/validate-pods"
SPREADS_PATH = "/validate-workloadspreads"
SPREADS_WEBHOOK = "validate-workloadspreads.workloadspread.united.io"
"""The webhook on WorkloadSpread CREATE that targets the spread's namespace before it exists."""
SPREAD_GROUPS = (GROUP, KRUISE_GROUP)
SERVICE = "united-webhook"
"""The Service in the controller's namespace that reaches every replica's webhook port."""
CONVERT_PATH = "/convert"
EXCLUDE_LABEL = "workloadspread.united.io/webhook"
"""A namespace labelled ``<this>=disabled`` is never sent to the pod webhooks."""
EXCLUDED = "disabled"
NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace to its name (Kubernetes 1.21+, locked on in 1.22)."""
MAX_TARGETED_NAMESPACES = 200
"""The most namespaces the ``In`` list names (about 13 KB of names at most in each configuration,
rewritten whole when one comes or goes); beyond it every namespace is sent, as before."""
NO_NAMESPACE = "no_namespace"
"""The value an empty ``In`` list holds (the API server refuses an empty one): a valid label
value that no namespace name can be (names have no ``_``)."""
SYSTEM_NAMESPACE = "kube-system"
FAILURE_POLICIES: tuple[FailurePolicy, ...] = ("Ignore", "Fail")
TIMEOUT_SECONDS = 3
API_VERSION = "admissionregistration.k8s.io/v1"


def url_problem(url: str) -> str | None:
    """Why the API server would refuse ``url`` as a webhook's base URL, or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        return str(exc)
    if parts.scheme != "https":
        return "must be an https URL"
    if not parts.hostname:
        return "must name a host"
    if parts.username is not None or parts.password is not None:
        return "must not carry user information"
    if parts.query or parts.fragment:
        return "must not have a query or a fragment"
    return None


def client_config(*, url: str | None, service: tuple[str, str, int] | None, path: str, ca_bundle: str) -> JSON:
    """Where the API server calls: ``url + path``, or ``service`` = (namespace, name, port) at ``path``;
    ``ca_bundle`` is the base64 PEM of the CAs it trusts."""
    config: JSON = {}
    if url is not None:
        config["url"] = url.rstrip("/") + path
    elif service is not None:
        namespace, name, port = service
        config["service"] = {"namespace": namespace, "name": name, "path": path, "port": port}
    else:
        raise ValueError("a webhook needs a url or a service")
    if ca_bundle:
        config["caBundle"] = ca_bundle
    return config


def namespace_selector(
    controller_namespace: str,
    *,
    match_labels: Mapping[str, str] | None = None,
    targets: Collection[str] | None = None,
) -> JSON:
    """Every namespace but kube-system, the controller's and those labelled out (see the module
    docstring); ``match_labels`` narrows further (an opt-in label, or a test's namespace), and
    so do ``targets`` (:func:`with_targets`)."""
    selector: JSON = {
        "matchExpressions": [
            {
                "key": NAME_LABEL,
                "operator": "NotIn",
                "values": sorted({SYSTEM_NAMESPACE, controller_namespace}),
            },
            {"key": EXCLUDE_LABEL, "operator": "NotIn", "values": [EXCLUDED]},
        ]
    }
    if match_labels:
        selector["matchLabels"] = dict(match_labels)
    return with_targets(selector, targets)


def _is_target_expression(expression: Any) -> bool:
    return isinstance(expression, dict) and expression.get("key") == NAME_LABEL and expression.get("operator") == "In"


def with_targets(selector: JSON | None, targets: Collection[str] | None) -> JSON:
    """``selector`` with its ``kubernetes.io/metadata.name In`` expression (the only one the
    controller owns) replaced by one naming ``targets``, or removed when ``targets`` is None
    (every namespace the rest allows). An empty ``targets`` selects no namespace."""
    selector = dict(selector or {})
    expressions = [e for e in selector.get("matchExpressions") or [] if not _is_target_expression(e)]
    if targets is not None:
        expressions.append({"key": NAME_LABEL, "operator": "In", "values": sorted(set(targets)) or [NO_NAMESPACE]})
    if expressions:
        selector["matchExpressions"] = expressions
    else:
        selector.pop("matchExpressions", None)
    return selector


def targets_of(selector: JSON | None) -> list[str] | None:
    """The namespaces ``selector``'s ``In`` expression names (:func:`with_targets`), None without one."""
    for expression in (selector or {}).get("matchExpressions") or []:
        if _is_target_expression(expression):
            return [str(v) for v in expression.get("values") or [] if v != NO_NAMESPACE]
    return None


def _rule(operation: str, resource: str, groups: Collection[str] = ("",), versions: Collection[str] = ("v1",)) -> JSON:
    return {
        "operations": [operation],
        "apiGroups": list(groups),
        "apiVersions": list(versions),
        "resources": [resource],
        "scope": "Namespaced",
    }


def _webhook(name: str, config: JSON, rules: list[JSON], selector: JSON, failure_policy: FailurePolicy) -> JSON:
    if failure_policy not in FAILURE_POLICIES:
        raise ValueError(f"failurePolicy must be one of {', '.join(FAILURE_POLICIES)}")
    return {
        "name": name,
        "clientConfig": config,
        "rules": rules,
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "namespaceSelector": selector,
        "objectSelector": {},
        "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1", "v1beta1"],
    }


def mutating(*, client: JSON, selector: JSON, failure_policy: FailurePolicy = "Ignore") -> JSON:
    """The MutatingWebhookConfiguration; ``client`` from :func:`client_config` at :data:`MUTATE_PATH`."""
    webhook = _webhook("mutate-pods.workloadspread.united.io", client, [_rule("CREATE", "pods")], selector,
                       failure_policy)  # fmt: skip
    webhook["reinvocationPolicy"] = "Never"
    return {
        "apiVersion": API_VERSION,
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": "united"}},
        "webhooks": [webhook],
    }


def spreads_webhook(*, client: JSON, selector: JSON) -> JSON:
    """The webhook on WorkloadSpread CREATE (``client`` at :data:`SPREADS_PATH`), ``selector``
    without the targets (:func:`with_targets`), always ``Ignore`` (see the module docstring)."""
    rules = [_rule("CREATE", "workloadspreads", SPREAD_GROUPS, ("*",))]
    return _webhook(SPREADS_WEBHOOK, client, rules, with_targets(selector, None), "Ignore")


def validating(
    *, client: JSON, selector: JSON, failure_policy: FailurePolicy = "Ignore", spreads: JSON | None = None
) -> JSON:
    """The ValidatingWebhookConfiguration; ``client`` from :func:`client_config` at :data:`VALIDATE_PATH`,
    ``spreads`` the :func:`spreads_webhook` (None: only the pods' webhook)."""
    rules = [_rule("DELETE", "pods"), _rule("CREATE", "pods/eviction")]
    webhooks = [_webhook("validate-pods.workloadspread.united.io", client, rules, selector, failure_policy)]
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": "united"}},
        "webhooks": webhooks if spreads is None else [*webhooks, spreads],
    }


def configurations(
    *,
    namespace: str,
    url: str | None = None,
    service: str = SERVICE,
    port: int = 443,
    ca_bundle: str = "",
    failure_policy: FailurePolicy = "Ignore",
    match_labels: Mapping[str, str] | None = None,
    targets: Collection[str] | None = None,
) -> tuple[JSON, JSON]:
    """Both configurations of a controller running in ``namespace``: calling ``url`` when given
    (``--webhook-url``), else the Service ``service:port`` there (what ``manifests/`` ships, with
    an empty ``caBundle`` the controller fills in); ``targets`` as :func:`with_targets`."""
    selector = namespace_selector(namespace, match_labels=match_labels, targets=targets)

    def client(path: str) -> JSON:
        return client_config(url=url, service=(namespace, service, port), path=path, ca_bundle=ca_bundle)

    spreads = spreads_webhook(client=client(SPREADS_PATH), selector=selector)
    return (
        mutating(client=client(MUTATE_PATH), selector=selector, failure_policy=failure_policy),
        validating(client=client(VALIDATE_PATH), selector=selector, failure_policy=failure_policy, spreads=spreads),
    )


__all__ = [
    "CONVERT_PATH",
    "EXCLUDED",
    "EXCLUDE_LABEL",
    "FAILURE_POLICIES",
    "MAX_TARGETED_NAMESPACES",
    "MUTATE_PATH",
    "NAME",
    "NAME_LABEL",
    "NO_NAMESPACE",
    "SERVICE",
    "SPREADS_PATH",
    "SPREADS_WEBHOOK",
    "SPREAD_GROUPS",
    "SYSTEM_NAMESPACE",
    "TIMEOUT_SECONDS",
    "VALIDATE_PATH",
    "FailurePolicy",
    "client_config",
    "configurations",
    "mutating",
    "namespace_selector",
    "spreads_webhook",
    "targets_of",
    "url_problem",
    "validating",
    "with_targets",
]
