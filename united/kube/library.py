"""``kubernetes_asyncio`` without its generated APIs and models, which this project never calls.

The library's packages import every generated API class and all ~800 models on first import:
about 30 MiB of a controller's resident memory and nine tenths of its modules, for code the
client does not use (it sends plain JSON through the library's ``ApiClient`` transport). Here
``kubernetes_asyncio.client`` and ``kubernetes_asyncio.client.models`` are registered as
packages whose ``__init__`` runs only when a name they alone define is asked for; the
transport, configuration and exceptions modules are imported directly. Anything else that
asks for a generated API or model still gets it: it just pays for the import then.
If the library was imported before this module, or its layout is not the one expected, it is
imported as it is.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

_LIBRARY = "kubernetes_asyncio"


def _package(name: str, path: Sequence[str] | None, *, lazy: bool) -> tuple[ModuleType, importlib.machinery.ModuleSpec]:
    """Register ``name`` in ``sys.modules`` without running its ``__init__``; ``lazy``: run it on
    the first name asked for that is neither set nor a submodule."""
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not a package", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if lazy:
        loader = spec.loader
        loaded = False

        def load_on_demand(attr: str) -> object:
            nonlocal loaded
            if attr.startswith("__") or loaded:
                raise AttributeError(attr)
            if importlib.machinery.PathFinder.find_spec(f"{name}.{attr}", module.__path__) is not None:
                return importlib.import_module(f"{name}.{attr}")
            loaded = True
            loader.exec_module(module)
            try:
                return module.__dict__[attr]
            except KeyError:
                raise AttributeError(attr) from None

        module.__getattr__ = load_on_demand  # type: ignore[method-assign]
    return module, spec


def _install() -> None:
    if _LIBRARY in sys.modules:
        return
    top, spec = _package(_LIBRARY, None, lazy=False)
    try:
        client, _ = _package(f"{_LIBRARY}.client", top.__path__, lazy=True)
        top.client = client  # type: ignore[attr-defined]
        client.models, _ = _package(f"{_LIBRARY}.client.models", client.__path__, lazy=True)  # type: ignore[attr-defined]
        from kubernetes_asyncio.client import api_client, configuration, exceptions

        client.ApiClient = api_client.ApiClient  # type: ignore[attr-defined]
        client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
        client.ApiException = exceptions.ApiException  # type: ignore[attr-defined]
        client.ApiValueError = exceptions.ApiValueError  # type: ignore[attr-defined]
        assert spec.loader is not None
        spec.loader.exec_module(top)
    except Exception:  # a layout this does not know: the library's own import, whole
        for name in [n for n in sys.modules if n == _LIBRARY or n.startswith(f"{_LIBRARY}.")]:
            del sys.modules[name]


_install()

from kubernetes_asyncio.client import ApiClient, Configuration  # noqa: E402
from kubernetes_asyncio.config import (  # noqa: E402
    ConfigException,
    kube_config,
    load_incluster_config,
    load_kube_config,
    load_kube_config_from_dict,
)

__all__ = [
    "ApiClient",
    "ConfigException",
    "Configuration",
    "kube_config",
    "load_incluster_config",
    "load_kube_config",
    "load_kube_config_from_dict",
]
