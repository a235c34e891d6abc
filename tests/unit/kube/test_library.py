"""The library is imported without its generated APIs and models, and still hands them out."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

PROBE = textwrap.dedent(
    """
    import asyncio, json, sys
    from united.kube.client import KubeClient

    async def main(path):
        async with await KubeClient.from_kubeconfig(path) as client:
            host = client._api.configuration.host
        generated = sorted(n for n in sys.modules if n.startswith(("kubernetes_asyncio.client.models.",
                                                                     "kubernetes_asyncio.client.api.")))
        return host, generated

    host, before = asyncio.run(main(sys.argv[1]))
    import kubernetes_asyncio.client as client
    api, model = client.CoreV1Api.__name__, client.models.V1Pod.__name__
    print(json.dumps({"host": host, "before": len(before), "api": api, "model": model,
                      "after": sum(n.startswith("kubernetes_asyncio.client.models.") for n in sys.modules)}))
    """
)


def test_a_client_is_built_without_the_generated_code_which_is_still_there_when_asked_for(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(kubeconfig)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    seen = json.loads(out.splitlines()[-1])
    assert seen["host"] == "https://127.0.0.1:6443"
    assert seen["before"] == 0
    assert (seen["api"], seen["model"]) == ("CoreV1Api", "V1Pod")
    assert seen["after"] > 500


def test_a_layout_it_does_not_know_gets_the_library_imported_whole() -> None:
    probe = textwrap.dedent(
        """
        import importlib.machinery, sys
        find, hidden = importlib.machinery.PathFinder.find_spec, []
        def hide_models(name, path=None, target=None):  # once: as if the package were not there
            if name == "kubernetes_asyncio.client.models" and not hidden:
                hidden.append(name)
                return None
            return find(name, path, target)
        importlib.machinery.PathFinder.find_spec = hide_models
        from united.kube import library
        importlib.machinery.PathFinder.find_spec = find
        import kubernetes_asyncio.client
        print(hidden == ["kubernetes_asyncio.client.models"], library.ApiClient is kubernetes_asyncio.client.ApiClient,
              "kubernetes_asyncio.client.models.v1_pod" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60).stdout
    assert out.split() == ["True", "True", "True"]
