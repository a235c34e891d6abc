#!/usr/bin/env python3
"""Copy into the Helm chart the files it ships verbatim, so the repository keeps one source.

Helm reads only files inside the chart directory, so ``charts/united/`` holds copies of:

* ``crds/apps.united.io_*.yaml`` -> ``charts/united/crds/`` (installed by Helm before the templates);
* ``manifests/monitoring/alerts.yaml`` and ``dashboard.json`` -> ``charts/united/files/`` (the
  PrometheusRule and the dashboard ConfigMap);
* ``manifests/admission-policy/webhook-configurations.yaml`` -> ``charts/united/files/admission-policy.yaml``
  (the ValidatingAdmissionPolicies of Kubernetes 1.30+, namespace-independent).

Usage::

    python scripts/sync_chart.py           # (re)write the copies
    python scripts/sync_chart.py --check   # exit 1 if a copy differs from its source

``tests/unit/chart/test_chart.py`` runs the check. The templates themselves are kept equal to
``manifests/base`` (and ``manifests/kruise``) by the same tests, through ``helm template``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "united"


def copies(root: Path = ROOT) -> dict[Path, Path]:
    """Each chart copy and its source."""
    chart = root / "charts" / "united"
    pairs = {chart / "crds" / source.name: source for source in sorted((root / "crds").glob("apps.united.io_*.yaml"))}
    for name in ("alerts.yaml", "dashboard.json"):
        pairs[chart / "files" / name] = root / "manifests" / "monitoring" / name
    policies = root / "manifests" / "admission-policy" / "webhook-configurations.yaml"
    pairs[chart / "files" / "admission-policy.yaml"] = policies
    return pairs


def stale(root: Path = ROOT) -> list[Path]:
    """The copies that are missing or differ from their source, and copies of nothing."""
    pairs = copies(root)
    out = [copy for copy, source in pairs.items() if not copy.is_file() or copy.read_bytes() != source.read_bytes()]
    chart = root / "charts" / "united"
    extra = [p for p in sorted((chart / "crds").glob("*")) + sorted((chart / "files").glob("*")) if p not in pairs]
    return out + extra


def sync(root: Path = ROOT) -> None:
    """Rewrite every copy from its source and remove copies whose source is gone."""
    pairs = copies(root)
    for copy in stale(root):
        if copy in pairs:
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(pairs[copy].read_bytes())
        else:
            copy.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if a copy is out of date")
    args = parser.parse_args(argv)
    if args.check:
        out = stale()
        for path in out:
            print(f"{path.relative_to(ROOT)}: out of date (python scripts/sync_chart.py)", file=sys.stderr)
        return 1 if out else 0
    sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
