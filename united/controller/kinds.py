"""The kinds ``united run`` serves, each registering itself with the manager (its ``setup``): the
one place that names them, above both the manager and the kinds in the layers."""

from __future__ import annotations

from united.controller.manager import Kind
from united.uniteddeployment import kind as uniteddeployment
from united.workloadspread import kind as workloadspread

KINDS: tuple[Kind, ...] = (uniteddeployment.setup, workloadspread.setup)
