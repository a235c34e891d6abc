"""``united plan`` and ``united admit`` for a WorkloadSpread: read files, call the pure core, print.

``admit`` answers what the pod webhook would: the pod is assumed to belong to the spread's
target (the owner chain needs a cluster), then the same booking and injection run as in the
webhook. Bad input raises :class:`ManifestError`; the CLI prints it and exits 2.
"""

from __future__ import annotations

import argparse
import io
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from united.api.field import FieldError, ManifestError, Path
from united.cli.manifest import load_documents, read_text, state_entries
from united.cli.output import print_json, print_table
from united.placement.patch import PatchError
from united.workloadspread import model
from united.workloadspread.admission import admit
from united.workloadspread.booking import Booking, book_create, book_delete
from united.workloadspread.injection import inject
from united.workloadspread.matching import controller_ref, is_active, selects
from united.workloadspread.plan import Load, plan

OPERATIONS = ("CREATE", "DELETE", "EVICT")


def documents(path: str) -> list[Any]:
    """The YAML documents of ``path``; stdin is read once and put back, so the caller may
    look at the kind and hand the same file to another command."""
    text = read_text(path)
    if path == "-":
        sys.stdin = io.StringIO(text)
    return load_documents(text, name="<stdin>" if path == "-" else path)


def is_workloadspread(docs: Sequence[Any]) -> bool:
    return any(isinstance(d, dict) and d.get("kind") == model.KIND for d in docs)


def plan_command(args: argparse.Namespace, docs: Sequence[Any]) -> int:
    ws = admit(_spread(docs, args.file))
    if args.replicas is None:
        raise ManifestError([FieldError("--replicas", "Required value: the number of new pods to place")])
    if args.replicas < 0:
        raise ManifestError([FieldError("--replicas", f"Invalid value: {args.replicas}: must be at least 0")])
    state = _state(args.state, ws) if args.state else {}
    result = plan(ws, replicas=args.replicas, state=state, now=datetime.now(UTC))
    if args.output == "json":
        print_json(result.to_dict())
        return 0
    print(f"WorkloadSpread {result.name}: {result.replicas} new pod(s), {result.unplaced} unplaced")
    rows = [("SUBSET", "REPLICAS", "MAX", "REASON", "MESSAGE")]
    rows += [
        (s.name, str(s.replicas), "-" if s.max_replicas is None else str(s.max_replicas), s.reason, s.message)
        for s in result.subsets
    ]
    print_table(rows)
    return 0


def admit_command(args: argparse.Namespace) -> int:
    ws = admit(_spread(documents(args.file), args.file))
    pod_docs = documents(args.pod)
    pod = pod_docs[0] if pod_docs else None
    if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
        raise ManifestError([FieldError(args.pod, "must be a Pod object")])
    if args.replicas is not None and args.replicas < 0:
        raise ManifestError([FieldError("--replicas", f"Invalid value: {args.replicas}: must be at least 0")])
    percent = any(isinstance(v, str) for s in ws.spec.subsets for v in (s.max_replicas, s.min_replicas))
    if percent and args.replicas is None:
        raise ManifestError([FieldError("--replicas", "Required value: a subset's replicas are a percentage")])
    now = datetime.now(UTC)
    out, subset = pod, None
    if args.operation == "CREATE":
        booking = _book_new(ws, pod, replicas=args.replicas or 0, now=now)
        if booking.subset is not None:
            try:
                out, subset = inject(pod, ws, booking.subset, uid=booking.uid), booking.subset
            except PatchError as e:
                print(f"note: the subset patch cannot be applied, the pod is admitted unplaced: {e}", file=sys.stderr)
    else:
        booking = book_delete(ws, pod, now=now)
        subset = booking.subset
    status = booking.status if booking.status is not None else ws.status
    result = {"allowed": True, "subset": subset, "pod": out, "status": status.to_dict()}
    if args.output == "json":
        print_json(result)
    else:
        sys.stdout.write(yaml.safe_dump(result, sort_keys=False, default_flow_style=False))
    return 0


def _book_new(ws: model.WorkloadSpread, pod: dict[str, Any], *, replicas: int, now: datetime) -> Booking:
    if not is_active(pod) or controller_ref(pod) is None or not selects(ws, pod) or ws.deleting:
        print("note: the webhook leaves this pod alone (not active, no controller, or filtered out)", file=sys.stderr)
        return Booking(None)
    return book_create(ws, pod, replicas=replicas, now=now, new_uid=lambda: str(uuid.uuid4()))


def _spread(docs: Sequence[Any], name: str) -> Any:
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == model.KIND]
    if found:
        return found[0]
    if len(docs) == 1:
        return docs[0]
    raise ManifestError([FieldError(name, f"no WorkloadSpread among {len(docs)} documents")])


def _state(path: str, ws: model.WorkloadSpread) -> dict[str, Load]:
    docs = load_documents(read_text(path), name="<stdin>" if path == "-" else path)
    entries = state_entries(docs[0] if docs else {}, {"pods": int, "unschedulable": bool})
    unknown = [
        FieldError(str(Path("state").child("subsets").key(n)), "Not found: no such subset in spec.subsets")
        for n in entries
        if ws.spec.subset(n) is None
    ]
    if unknown:
        raise ManifestError(unknown)
    return {n: Load(pods=v.get("pods", 0), unschedulable=v.get("unschedulable", False)) for n, v in entries.items()}


def register_admit(sub: Any) -> None:
    a = sub.add_parser("admit", help="show what the pod webhook would do to a pod of a WorkloadSpread's target")
    a.add_argument("file", metavar="WS", help="WorkloadSpread manifest (may carry a status), or - for stdin")
    a.add_argument("pod", metavar="POD", help="the pod, as created (CREATE) or as it is (DELETE, EVICT)")
    a.add_argument("--operation", choices=OPERATIONS, default="CREATE")
    a.add_argument("--replicas", type=int, metavar="N", help="the target's replicas (for percentages)")
    a.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    a.set_defaults(func=admit_command)
