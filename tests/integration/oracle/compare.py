"""What a controller made of one case, normalised so two controllers' outcomes compare.

An :class:`Outcome` is the admission verdict of every object the case created (or updated), and
every object in the case's namespace afterwards: the TrainJob (spec as the mutating webhook left
it, status), JobSets, ConfigMaps, Secrets, PodGroups, and the Events about the TrainJob.

Normalising removes what differs by nature between two runs, and nothing else:

* ids and bookkeeping: ``uid``, ``resourceVersion``, ``generation``, ``creationTimestamp``,
  ``managedFields``, owner references' ``uid``; the namespace's name (each phase has its own)
  wherever it occurs in a string;
* times: conditions' ``lastTransitionTime``, ``runtimePatches[].time`` (kept as ``<time>``: that
  a time was set is compared), Events' times and counts;
* resource amounts compare as quantities (``4`` is ``"4"``);
* generated key bytes: an MPI Secret's key pair becomes the kind of key it is (``<EC PRIVATE KEY
  PEM>``, ``<ecdsa-sha2-nistp521 public key>``); a Flux curve certificate's Z85 keys become
  ``<z85 40>``; the runtime snapshot's YAML is parsed and normalised as an object;
* trainjob's phase conditions (``trainjob.api.phases``: Queued, Initializing, Running,
  Restarting), a deliberate addition that upstream lacks: dropped from the TrainJob's status
  (upstream's own conditions still compare as they are).

:func:`diff` lists the differences as ``path: upstream=... trainjob=...`` lines.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from trainjob.api import phases, quantity

Obj = dict[str, Any]

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
QUANTITY_KEYS = ("limits", "requests", "minResources")

META_DROP = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
)


@dataclass
class Admission:
    """One create/update call: allowed, or refused with the apiserver's message; warnings."""

    what: str  # "create TrainJob/job", "update TrainJob/job"
    allowed: bool
    message: str = ""
    warnings: list[str] = field(default_factory=list)

    def as_obj(self) -> Obj:
        out: Obj = {"allowed": self.allowed}
        if self.message:
            out["message"] = TIME.sub("<time>", self.message)
        if self.warnings:
            out["warnings"] = sorted(self.warnings)
        return out


@dataclass
class Outcome:
    admissions: list[Admission] = field(default_factory=list)
    objects: dict[str, Obj] = field(default_factory=dict)  # "Kind/name" -> normalised
    events: list[Obj] = field(default_factory=list)

    def as_obj(self) -> Obj:
        return {
            "admission": {a.what: a.as_obj() for a in self.admissions},
            "objects": self.objects,
            "events": self.events,
        }

    @property
    def refused(self) -> bool:
        """Every TrainJob of the case was refused (nothing for a controller to do)."""
        tjs = [a for a in self.admissions if a.what.startswith("create TrainJob/")]
        runtimes = [
            a for a in self.admissions if not a.what.startswith(("create TrainJob/", "update "))
        ]
        if any(not a.allowed for a in runtimes):
            return True
        return bool(tjs) and all(not a.allowed for a in tjs)


def _replace_ns(value: Any, namespace: str) -> Any:
    if isinstance(value, str):
        return value.replace(namespace, "<ns>") if namespace else value
    if isinstance(value, list):
        return [_replace_ns(v, namespace) for v in value]
    if isinstance(value, dict):
        return {k: _replace_ns(v, namespace) for k, v in value.items()}
    return value


def normalise_meta(meta: Obj) -> Obj:
    out = {k: v for k, v in meta.items() if k not in META_DROP}
    refs = []
    for ref in out.get("ownerReferences") or ():
        refs.append({k: v for k, v in ref.items() if k != "uid"})
    if refs:
        out["ownerReferences"] = refs
    for k in ("labels", "annotations"):
        if out.get(k) == {}:
            del out[k]
    return out


def quantities(value: Any, key: str = "") -> Any:
    """Resource amounts as canonical quantity strings: ``4``, ``"4"`` and ``"4000m"`` are one
    amount (Go writes the string, a manifest may hold the number)."""
    if isinstance(value, dict):
        if key in QUANTITY_KEYS:
            return {k: _canonical(v) for k, v in value.items()}
        return {k: quantities(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [quantities(v, key) for v in value]
    return value


def _canonical(v: Any) -> Any:
    if isinstance(v, dict | list | bool):
        return v
    try:
        return str(quantity.parse(v))
    except quantity.QuantityError:
        return v


def prune(value: Any) -> Any:
    """Empty maps and lists and nulls dropped, recursively: ``resources: {}`` (what Go's typed
    round trip writes) means what an absent field means."""
    if isinstance(value, dict):
        out = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def _key_kind(text: str) -> str:
    m = re.search(r"-----BEGIN ([A-Z ]+)-----", text)
    if m:
        return f"<{m.group(1)} PEM>"
    parts = text.split()
    if parts and parts[0].startswith(("ssh-", "ecdsa-")):
        return f"<{parts[0]} public key>"
    return f"<{len(text)} bytes>"


Z85 = re.compile(r'(public-key|secret-key) = "[^"]{40}"')


def normalise_secret(obj: Obj) -> Obj:
    data = {}
    for k, v in (obj.get("data") or {}).items():
        try:
            text = base64.b64decode(v).decode()
        except (ValueError, UnicodeDecodeError):
            data[k] = "<binary>"
            continue
        if k == "curve.cert":
            data[k] = Z85.sub(r'\1 = "<z85 40>"', text)
        else:
            data[k] = _key_kind(text)
    if data:
        obj["data"] = data
    return obj


def normalise_object(obj: Obj, namespace: str) -> Obj:
    obj = json.loads(json.dumps(obj))
    if not obj.get("status"):
        obj.pop("status", None)
    obj["metadata"] = normalise_meta(obj.get("metadata") or {})
    kind = obj.get("kind")
    if kind == "Secret":
        obj = normalise_secret(obj)
    elif kind == "ConfigMap" and "runtime" in (obj.get("data") or {}):
        snap = yaml.safe_load(obj["data"]["runtime"])
        if isinstance(snap, dict):
            snap["metadata"] = normalise_meta(snap.get("metadata") or {})
            snap.pop("status", None)
        obj["data"]["runtime"] = snap
    elif kind == "TrainJob":
        for p in (obj.get("spec") or {}).get("runtimePatches") or ():
            if p.get("time"):
                p["time"] = "<time>"
        status = obj.get("status") or {}
        # trainjob's phase conditions (Queued, Initializing, Running, Restarting), added on
        # purpose beside upstream's (trainjob.api.phases says why the Kubeflow SDK reads the same
        # status with them); upstream's own conditions are compared as they are
        if "conditions" in status:
            status["conditions"] = [
                k for k in status["conditions"] if k.get("type") not in phases.PHASE_CONDITIONS
            ]
        for cond in status.get("conditions") or ():
            cond.pop("lastTransitionTime", None)
            cond.pop("observedGeneration", None)
        # times, and KEP-2899's (#3824) status fields that upstream v2.3.0 has not built yet
        for when in ("startTime", "completionTime"):
            (obj.get("status") or {}).pop(when, None)
    return prune(quantities(_replace_ns(obj, namespace)))  # type: ignore[no-any-return]


def normalise_event(ev: Obj, namespace: str) -> Obj:
    """An ``events.k8s.io/v1`` Event reduced to what a reader sees (no times, counts, names)."""
    regarding = ev.get("regarding") or {}
    out = {
        "regarding": f"{regarding.get('kind')}/{regarding.get('name')}",
        "type": ev.get("type"),
        "reason": ev.get("reason"),
        "action": ev.get("action"),
        "note": TIME.sub("<time>", str(ev.get("note") or "")),
        "reportingController": ev.get("reportingController"),
    }
    return _replace_ns(out, namespace)  # type: ignore[no-any-return]


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "..."


def diff(upstream: Any, ours: Any, path: str = "") -> list[str]:
    """Differences between two normalised values, one ``path: upstream=... trainjob=...`` each."""
    if isinstance(upstream, dict) and isinstance(ours, dict):
        out: list[str] = []
        for k in sorted(set(upstream) | set(ours), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in ours:
                out.append(f"{sub}: upstream={_short(upstream[k])} trainjob=<absent>")
            elif k not in upstream:
                out.append(f"{sub}: upstream=<absent> trainjob={_short(ours[k])}")
            else:
                out.extend(diff(upstream[k], ours[k], sub))
        return out
    if isinstance(upstream, list) and isinstance(ours, list):
        if len(upstream) == len(ours):
            out = []
            for i, (a, b) in enumerate(zip(upstream, ours, strict=True)):
                out.extend(diff(a, b, f"{path}[{i}]"))
            return out
        return [f"{path}: upstream={_short(upstream)} trainjob={_short(ours)}"]
    if isinstance(upstream, str) and isinstance(ours, str) and upstream != ours:
        return [f"{path}: {_string_diff(upstream, ours)}"]
    if upstream != ours:
        return [f"{path}: upstream={_short(upstream)} trainjob={_short(ours)}"]
    return []


def _string_diff(a: str, b: str, context: int = 80) -> str:
    """Two long strings shown from a little before where they part."""
    if len(a) + len(b) <= 400:
        return f"upstream={json.dumps(a)} trainjob={json.dumps(b)}"
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    start = max(0, i - context)
    cut = "..." if start else ""
    return (
        f"(from char {start}) upstream={cut}{json.dumps(a[start : i + 2 * context])} "
        f"trainjob={cut}{json.dumps(b[start : i + 2 * context])}"
    )


def event_list(events: list[Obj]) -> list[Obj]:
    """Distinct events, in a stable order."""
    seen: dict[str, Obj] = {}
    for ev in events:
        seen.setdefault(json.dumps(ev, sort_keys=True), ev)
    return [seen[k] for k in sorted(seen)]
